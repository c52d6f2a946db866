package config

import (
	"testing"
	"time"
)

func TestValidateOnBuiltConfig(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		kind   ErrorKind
		key    string
	}{
		{"liveness zero", func(c *Config) { c.Heartbeat.Liveness = 0 }, ErrRange, "heartbeat.liveness"},
		{"gather too long", func(c *Config) { c.Peers.Gather = time.Second }, ErrRange, "peers.gather"},
		{"gather negative", func(c *Config) { c.Peers.Gather = -time.Microsecond }, ErrRange, "peers.gather"},
		{"bad theme", func(c *Config) { c.Console.Theme = "neon" }, ErrRange, "console.theme"},
		{"bad endpoint", func(c *Config) { c.Peers.Listen = "127.0.0.1:5570" }, ErrType, "peers.listen"},
		{"bad url", func(c *Config) { c.Notifier.URL = "ftp://x" }, ErrType, "notifier.url"},
		{"store url scheme", func(c *Config) { c.Store.URL = "http://h:1" }, ErrType, "store.url"},
		{"store url port", func(c *Config) { c.Store.URL = "redis://a:1,b:notaport" }, ErrType, "store.url"},
		{"store url empty host", func(c *Config) { c.Store.URL = "redis://" }, ErrType, "store.url"},
		{"store path url scheme", func(c *Config) { c.Store.Path = "http://h:1" }, ErrType, "store.path"},
		{"store path redis port", func(c *Config) { c.Store.Path = "redis://h:0" }, ErrType, "store.path"},
		{"bad colour", func(c *Config) { c.Console.Palette = map[string]string{"accent": "red"} }, ErrRange, "console.palette"},
		{"same listener", func(c *Config) { c.Admin.Listen = c.Peers.Listen }, ErrConflict, "peers.listen and admin.listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(c)
			errs := asErrors(t, c.Validate())
			if len(errs.List) != 1 || errs.List[0].Kind != tt.kind || errs.List[0].Key != tt.key {
				t.Fatalf("got %v, want one %s error on %s", errs, tt.kind, tt.key)
			}
		})
	}
}
