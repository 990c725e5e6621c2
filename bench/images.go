package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
)

// createImage creates an image through the API (POST /v1/image with the
// default organization's credentials) and returns its id.
func createImage(ctx context.Context, p *Pictor, params map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	body, err := json.Marshal(params)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/v1/image", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.SetBasicAuth(p.APIID, p.APIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("POST /v1/image: %w", err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return "", statusError("POST /v1/image", resp)
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || created.ID == "" {
		return "", fmt.Errorf("POST /v1/image: answer without an id (%v)", err)
	}
	return created.ID, nil
}

// fetch GETs target (path and query) from the edge and returns the body
// of a 200 and its Content-Type.
func fetch(ctx context.Context, p *Pictor, target string) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+target, nil)
	if err != nil {
		return nil, "", err
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", target, err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return nil, "", statusError("GET "+target, resp)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", target, err)
	}
	return b, resp.Header.Get("Content-Type"), nil
}

// hostPort returns the host:port of an http:// base URL.
func hostPort(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return "", fmt.Errorf("base URL %q: want http://host:port", base)
	}
	return u.Host, nil
}

// TileHTML returns a w×h card as an HTML snippet, smaller than CardHTML's
// social card: a gradient and a title whose hue and text change with n
// and nonce, so that every tile is a distinct image.
func TileHTML(n, w, h int, nonce string) string {
	h1, h2 := (n*53)%360, (n*53+120)%360
	return fmt.Sprintf(`<style>html,body{margin:0;padding:0}
.t{box-sizing:border-box;width:%dpx;height:%dpx;padding:24px 28px;display:flex;flex-direction:column;justify-content:space-between;
background:linear-gradient(135deg,hsl(%d,70%%,35%%),hsl(%d,75%%,55%%));color:#fff;font-family:"DejaVu Sans",sans-serif}
h1{margin:0;font-size:34px;line-height:1.15}.f{font-size:16px;opacity:.85}</style>
<div class="t"><h1>Tile number %d of the edge benchmark</h1><div class="f">pictor.example · %s</div></div>
`, w, h, h1, h2, n, html.EscapeString(nonce))
}

// webpSize reads the width and height of a WebP from its first 30 bytes
// (simple lossy VP8, lossless VP8L or extended VP8X).
func webpSize(head []byte) (w, h int, err error) {
	if len(head) < 30 || string(head[:4]) != "RIFF" || string(head[8:12]) != "WEBP" {
		return 0, 0, errors.New("not a WebP")
	}
	switch string(head[12:16]) {
	case "VP8 ":
		// Frame tag (3 bytes), start code 9d 01 2a, then 14-bit sizes.
		if head[23] != 0x9d || head[24] != 0x01 || head[25] != 0x2a {
			return 0, 0, errors.New("WebP VP8 without its start code")
		}
		return int(binary.LittleEndian.Uint16(head[26:28]) & 0x3fff), int(binary.LittleEndian.Uint16(head[28:30]) & 0x3fff), nil
	case "VP8L":
		if head[20] != 0x2f {
			return 0, 0, errors.New("WebP VP8L without its signature")
		}
		v := binary.LittleEndian.Uint32(head[21:25])
		return int(v&0x3fff) + 1, int(v>>14&0x3fff) + 1, nil
	case "VP8X":
		le24 := func(b []byte) int { return int(b[0]) | int(b[1])<<8 | int(b[2])<<16 }
		return le24(head[24:27]) + 1, le24(head[27:30]) + 1, nil
	}
	return 0, 0, fmt.Errorf("WebP chunk %q unknown", head[12:16])
}
