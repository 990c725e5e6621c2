package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// ErrNoServer is returned when no running server published an endpoint.
var ErrNoServer = errors.New("no running server published an admin endpoint")

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
func (c *Client) CreateOrg(name, planName string) (*Created, error) {
	var out Created
	return &out, c.call("/admin/orgs", createRequest{Name: name, Plan: planName}, &out)
}

// SetSuspended asks the server to suspend or resume an organization.
func (c *Client) SetSuspended(orgID string, suspended bool) (*OrgState, error) {
	action := "resume"
	if suspended {
		action = "suspend"
	}
	var out OrgState
	return &out, c.call("/admin/orgs/"+url.PathEscape(orgID)+"/"+action, struct{}{}, &out)
}

func (c *Client) call(path string, in, out any) error {
	body, _ := json.Marshal(in)
	req, err := http.NewRequest(http.MethodPost, "http://"+c.ep.Addr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.ep.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("reach the running server's admin endpoint: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Message string `json:"message"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		return fmt.Errorf("server refused: %s", e.Message)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
