package oauth

import (
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/perm"
)

func TestConfigValidate(t *testing.T) {
	valid := keyFileConfig(t, "/nonexistent/oauth.key")
	tests := []struct {
		name   string
		modify func(*Config)
		field  string // "" for a valid config
	}{
		{"defaults", func(*Config) {}, ""},
		{"issuer with a trailing slash", func(c *Config) { c.Issuer = "https://pictor.example/" }, ""},
		{"no store", func(c *Config) { c.Store = nil }, "Store"},
		{"no key file", func(c *Config) { c.KeyFile = "" }, "KeyFile"},
		{"no keys", func(c *Config) { c.Keys = nil }, "Keys"},
		{"no issuer", func(c *Config) { c.Issuer = "" }, "Issuer"},
		{"issuer with a path", func(c *Config) { c.Issuer = "https://pictor.example/base" }, "Issuer"},
		{"issuer with a query", func(c *Config) { c.Issuer = "https://pictor.example?x=1" }, "Issuer"},
		{"issuer not http", func(c *Config) { c.Issuer = "ftp://pictor.example" }, "Issuer"},
		{"relative resource", func(c *Config) { c.Resource = "/mcp" }, "Resource"},
		{"resource with a fragment", func(c *Config) { c.Resource = "https://pictor.example/mcp#x" }, "Resource"},
		{"resource path with a pattern", func(c *Config) { c.Resource = "https://pictor.example/{mcp}" }, "Resource"},
		{"zero access TTL", func(c *Config) { c.AccessTTL = 0 }, "AccessTTL"},
		{"refresh shorter than access", func(c *Config) { c.RefreshTTL = time.Minute }, "RefreshTTL"},
		{"long code TTL", func(c *Config) { c.CodeTTL = time.Hour }, "CodeTTL"},
		{"no failure limit", func(c *Config) { c.ConsentFailures = Limit{} }, "ConsentFailures"},
		{"no registration burst", func(c *Config) { c.Registrations.Burst = 0 }, "Registrations"},
		{"no registrations per address", func(c *Config) { c.RegistrationsPerAddress.N = 0 }, "RegistrationsPerAddress"},
		{"unused clients kept for ever", func(c *Config) { c.UnusedClientTTL = 0 }, "UnusedClientTTL"},
		{"idle clients removed before their grants", func(c *Config) { c.IdleClientTTL = c.RefreshTTL + time.Hour }, "IdleClientTTL"},
		{"no cap on unfinished clients", func(c *Config) { c.MaxUnfinishedClients = 0 }, "MaxUnfinishedClients"},
		{"no cap per address", func(c *Config) { c.MaxUnfinishedClientsPerAddress = 0 }, "MaxUnfinishedClientsPerAddress"},
		{"cap per address above the total", func(c *Config) { c.MaxUnfinishedClientsPerAddress = c.MaxUnfinishedClients + 1 }, "MaxUnfinishedClientsPerAddress"},
		{"no scopes", func(c *Config) { c.Scopes = nil }, "Scopes"},
		{"unknown scope", func(c *Config) { c.Scopes = []perm.Permission{"images:paint"} }, "Scopes"},
		{"repeated scope", func(c *Config) { c.Scopes = []perm.Permission{perm.ImagesRead, perm.ImagesRead} }, "Scopes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid
			tt.modify(&cfg)
			err := cfg.Validate()
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.field != "" && (err == nil || !strings.Contains(err.Error(), tt.field)):
				t.Fatalf("Validate = %v, want an error naming %s", err, tt.field)
			}
			if tt.field != "" {
				if _, err := New(cfg); err == nil {
					t.Fatal("New accepted an invalid config")
				}
			}
		})
	}
}
