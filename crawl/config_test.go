package crawl

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/viper"
)

func TestDefaultConfigIsValid(t *testing.T) {
	c := DefaultConfig("1.2.3")
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig does not validate: %v", err)
	}
	if got, want := c.Agent(), "drover/1.2.3 (+"+DefaultContactURL+")"; got != want {
		t.Errorf("Agent() = %q, want %q", got, want)
	}
	if got := c.ProductToken(); got != "drover" {
		t.Errorf("ProductToken() = %q, want drover", got)
	}
	if c.PerHost != 2 || c.Scope != ScopeHost {
		t.Errorf("defaults: PerHost %d Scope %q, want 2 and host", c.PerHost, c.Scope)
	}
}

func TestAgent(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		agent     string
		token     string
		wantValid bool
	}{
		{"custom", Config{UserAgent: "MyBot/2.0 (+https://example.com/bot)"}, "MyBot/2.0 (+https://example.com/bot)", "MyBot", true},
		{"no version", Config{}, "drover/dev", "drover", true},
		{"bare token", Config{UserAgent: "my_bot"}, "my_bot", "my_bot", true},
		{"digits in token", Config{UserAgent: "bot2/1"}, "bot2/1", "bot2", false},
		{"leading space", Config{UserAgent: " bot/1"}, " bot/1", "", false},
		{"newline", Config{UserAgent: "bot/1\r\nX-Evil: 1"}, "bot/1\r\nX-Evil: 1", "bot", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.Agent(); got != tt.agent {
				t.Errorf("Agent() = %q, want %q", got, tt.agent)
			}
			if got := tt.cfg.ProductToken(); got != tt.token {
				t.Errorf("ProductToken() = %q, want %q", got, tt.token)
			}
			c := DefaultConfig("x")
			c.UserAgent, c.Version, c.ContactURL = tt.cfg.UserAgent, tt.cfg.Version, tt.cfg.ContactURL
			err := c.Validate()
			if (err == nil) != tt.wantValid {
				t.Errorf("Validate() = %v, want valid=%v", err, tt.wantValid)
			}
			if err != nil && !strings.Contains(err.Error(), "UserAgent") {
				t.Errorf("error %q does not name UserAgent", err)
			}
		})
	}
}

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		field string
		mut   func(*Config)
	}{
		{"ConnectTimeout", func(c *Config) { c.ConnectTimeout = 0 }},
		{"Timeout", func(c *Config) { c.Timeout = -time.Second }},
		{"MaxBodyBytes", func(c *Config) { c.MaxBodyBytes = 0 }},
		{"PerHost", func(c *Config) { c.PerHost = -1 }},
		{"Parallel", func(c *Config) { c.Parallel = -1 }},
		{"MinDelay", func(c *Config) { c.MinDelay = -1 }},
		{"MaxCrawlDelay", func(c *Config) { c.MaxCrawlDelay = -1 }},
		{"RobotsTTL", func(c *Config) { c.RobotsTTL = 0 }},
		{"MaxDepth", func(c *Config) { c.MaxDepth = -1 }},
		{"MaxPages", func(c *Config) { c.MaxPages = -5 }},
		{"Scope", func(c *Config) { c.Scope = "planet" }},
		{"Resolve key", func(c *Config) { c.Resolve = map[string]string{"demo.test": "127.0.0.1:80"} }},
		{`Resolve["demo.test:80"]`, func(c *Config) { c.Resolve = map[string]string{"demo.test:80": "127.0.0.1"} }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			c := DefaultConfig("1")
			tt.mut(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %v does not wrap ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q does not name %s", err, tt.field)
			}
			if _, err := New(c); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("New accepted the invalid config: %v", err)
			}
		})
	}
}

func TestIdlePerHost(t *testing.T) {
	for _, tt := range []struct{ perHost, parallel, want int }{
		{0, 0, 2}, // neither bounds a host's fetches: net/http's default
		{2, 0, 2},
		{6, 0, 6},
		{0, 8, 8}, // drover crawl: the coordinator caps, 8 local slots
		{4, 8, 4},
		{8, 3, 3},
		{0, 1, 2},
	} {
		c := Config{PerHost: tt.perHost, Parallel: tt.parallel}
		if got := c.idlePerHost(); got != tt.want {
			t.Errorf("PerHost %d, Parallel %d: idlePerHost() = %d, want %d", tt.perHost, tt.parallel, got, tt.want)
		}
	}
}

func TestFollow(t *testing.T) {
	seed := "http://h.test/docs/"
	links := []string{"http://h.test/docs/a", "http://other.test/", "HTTP://H.test:80/x#f", "mailto:a@b"}
	tests := []struct {
		name     string
		scope    Scope
		maxDepth int
		depth    int
		want     []string
	}{
		{"host scope", ScopeHost, 3, 0, []string{"http://h.test/docs/a", "http://h.test/x"}},
		{"prefix scope", ScopePrefix, 3, 2, []string{"http://h.test/docs/a"}},
		{"at max depth", ScopeHost, 3, 3, nil},
		{"beyond max depth", ScopeHost, 3, 4, nil},
		{"no depth limit", ScopeHost, 0, 1000, []string{"http://h.test/docs/a", "http://h.test/x"}},
	}
	if got := DefaultConfig("1").Follow("not a url", 0, links); got != nil {
		t.Errorf("Follow with a bad seed = %q, want none", got)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig("1")
			c.Scope, c.MaxDepth = tt.scope, tt.maxDepth
			got := c.Follow(seed, tt.depth, links)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Follow(depth %d) = %q, want %q", tt.depth, got, tt.want)
			}
		})
	}
}

func TestConfigFromViper(t *testing.T) {
	v := viper.New()
	v.SetConfigType("yaml")
	err := v.ReadConfig(strings.NewReader(`
user-agent: "mybot/2 (+https://example.com)"
connect-timeout: 3s
timeout: 1m
max-body-bytes: 2048
per-host: 4
min-delay: 250ms
scope: domain
max-depth: 7
max-pages: 1000
`))
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig("1")
	if err := v.Unmarshal(&c); err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig("1")
	want.UserAgent = "mybot/2 (+https://example.com)"
	want.ConnectTimeout, want.Timeout, want.MaxBodyBytes = 3*time.Second, time.Minute, 2048
	want.PerHost, want.MinDelay, want.Scope = 4, 250*time.Millisecond, ScopeDomain
	want.MaxDepth, want.MaxPages = 7, 1000
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("config from viper (-want +got):\n%s", diff)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}
