package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// Client sends operator commands to a running server.
type Client struct {
	ep   Endpoint
	http *http.Client
}

// Dial reads the endpoint file of the server holding dataDir.
func Dial(dataDir string) (*Client, error) {
	raw, err := os.ReadFile(filepath.Join(dataDir, EndpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoServer
	}
	if err != nil {
		return nil, fmt.Errorf("read admin endpoint: %w", err)
	}
	var ep Endpoint
	if err := json.Unmarshal(raw, &ep); err != nil {
		return nil, fmt.Errorf("read admin endpoint: %w", err)
	}
	return &Client{ep: ep, http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}}, nil
}

// CreateOrg asks the server to create an organization.
func (c *Client) CreateOrg(ctx context.Context, name, planName string) (*Created, error) {
	var out Created
	return &out, c.call(ctx, "/admin/orgs", createRequest{Name: name, Plan: planName}, &out)
}

// SetSuspended asks the server to suspend or resume an organization.
func (c *Client) SetSuspended(ctx context.Context, orgID string, suspended bool) (*OrgState, error) {
	action := "resume"
	if suspended {
		action = "suspend"
	}
	var out OrgState
	return &out, c.call(ctx, "/admin/orgs/"+url.PathEscape(orgID)+"/"+action, struct{}{}, &out)
}

// ListOrgs asks the server for every organization.
func (c *Client) ListOrgs(ctx context.Context) (*OrgList, error) {
	var out OrgList
	return &out, c.do(ctx, http.MethodGet, "/admin/orgs", nil, &out)
}

// SetPlan asks the server to move an organization to another plan.
func (c *Client) SetPlan(ctx context.Context, orgID, planName string) (*Org, error) {
	var out Org
	return &out, c.call(ctx, "/admin/orgs/"+url.PathEscape(orgID)+"/plan", planRequest{Plan: planName}, &out)
}

// CreateKey asks the server for a new owner key of an organization.
func (c *Client) CreateKey(ctx context.Context, orgID, name string) (*KeyCreated, error) {
	var out KeyCreated
	return &out, c.call(ctx, "/admin/orgs/"+url.PathEscape(orgID)+"/keys", keyRequest{Name: name}, &out)
}

// Reseal asks the server to seal every stored secret again under its
// current master key.
func (c *Client) Reseal(ctx context.Context) (*ResealReport, error) {
	var out ResealReport
	return &out, c.call(ctx, "/admin/reseal", struct{}{}, &out)
}

// Backup asks the server for a backup archive and copies it to w; the
// caller verifies what it wrote (Verify): a failure on the server's side
// after the first byte cuts the archive short of its manifest.
func (c *Client) Backup(ctx context.Context, w io.Writer) error {
	req, err := c.request(ctx, http.MethodPost, "/admin/backup", struct{}{})
	if err != nil {
		return err
	}
	// No overall timeout: an archive takes as long as it takes; the
	// server's absence still fails at once.
	client := &http.Client{Transport: c.http.Transport}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("reach the running server's admin endpoint: %w", err)
	}
	defer resp.Body.Close()
	if err := refusal(resp); err != nil {
		return err
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("receive the backup from the running server: %w", err)
	}
	return nil
}

func (c *Client) call(ctx context.Context, path string, in, out any) error {
	return c.do(ctx, http.MethodPost, path, in, out)
}

func (c *Client) request(ctx context.Context, method, path string, in any) (*http.Request, error) {
	var body io.Reader = http.NoBody
	if in != nil {
		raw, _ := json.Marshal(in)
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.ep.Addr+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.ep.Token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	req, err := c.request(ctx, method, path, in)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("reach the running server's admin endpoint: %w", err)
	}
	defer resp.Body.Close()
	if err := refusal(resp); err != nil {
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// refusal is the error of an answer other than 200.
func refusal(resp *http.Response) error {
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var e struct {
		Message string `json:"message"`
	}
	json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&e)
	if e.Message == "" { // a server from before the command: 404 or 405
		return fmt.Errorf("server refused: %s (a server of an older version?)", resp.Status)
	}
	return fmt.Errorf("server refused: %s", e.Message)
}
