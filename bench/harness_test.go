package bench

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSelect(t *testing.T) {
	all := []Scenario{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	tests := []struct {
		name    string
		names   []string
		want    string
		wantErr error
	}{
		{"default is all", nil, "a,b,c", nil},
		{"in the order named", []string{"c", "a"}, "c,a", nil},
		{"duplicates once", []string{"b", "b"}, "b", nil},
		{"unknown", []string{"a", "zipf"}, "", ErrUnknownScenario},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(all, tt.names)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.Name)
			}
			if strings.Join(names, ",") != tt.want {
				t.Fatalf("selected %v, want %s", names, tt.want)
			}
		})
	}
	for _, s := range Scenarios() {
		if s.Name == "" || s.About == "" || s.Run == nil {
			t.Errorf("scenario %+v is incomplete", s)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"no binary", func(c *Config) { c.Pictor = "" }, "--pictor"},
		{"short duration", func(c *Config) { c.Duration = time.Millisecond }, "--duration"},
		{"negative warm-up", func(c *Config) { c.Warmup = -1 }, "--warmup"},
		{"no pool", func(c *Config) { c.PoolSize = 0 }, "--pool-size"},
		{"no CLI parallelism", func(c *Config) { c.CLIParallel = 0 }, "--cli-parallel"},
		{"unknown scenario", func(c *Config) { c.Scenarios = []string{"nginx"} }, "--scenarios"},
		{"no edge clients", func(c *Config) { c.EdgeClients = 0 }, "--edge-clients"},
		{"no rounds", func(c *Config) { c.Rounds = 0 }, "--rounds"},
		{"no cluster script", func(c *Config) { c.ClusterScript = "" }, "--cluster-script"},
		{"no tools directory", func(c *Config) { c.ToolsDir = "" }, "--tools-dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			err := c.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Validate = %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
}
