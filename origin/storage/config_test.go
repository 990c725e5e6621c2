package storage_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/storage"
)

func TestConfigValidate(t *testing.T) {
	def := storage.DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tests := []struct {
		name string
		edit func(*storage.Config)
		flag string
	}{
		{"test timeout", func(c *storage.Config) { c.TestTimeout = 0 }, "--storage-test-timeout"},
		{"write timeout", func(c *storage.Config) { c.WriteTimeout = -time.Second }, "--storage-write-timeout"},
		{"write rate", func(c *storage.Config) { c.WriteMinRate = 0 }, "--storage-write-min-rate"},
		{"max write timeout below write timeout", func(c *storage.Config) { c.MaxWriteTimeout = time.Second }, "--storage-max-write-timeout"},
		{"part below S3's minimum", func(c *storage.Config) { c.PartSize = 1 << 20 }, "--storage-part-size"},
		{"no attempt", func(c *storage.Config) { c.MaxAttempts = 0 }, "--storage-max-attempts"},
		{"backoff", func(c *storage.Config) { c.MaxBackoff = 0 }, "--storage-max-backoff"},
		{"STS region", func(c *storage.Config) { c.STSRegion = "" }, "--storage-sts-region"},
		{"STS endpoint", func(c *storage.Config) { c.STSEndpoint = "sts.local" }, "--storage-sts-endpoint"},
		{"endpoint override", func(c *storage.Config) { c.EndpointOverride = "ftp://x" }, "EndpointOverride"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := storage.DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.flag) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tt.flag)
			}
			if _, err := storage.New(c); err == nil {
				t.Error("New accepted it")
			}
		})
	}
}
