package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestCrawlHosts: the file's crawl.hosts list gives host patterns their
// own politeness limits, in order; a bad entry is an error naming its key.
func TestCrawlHosts(t *testing.T) {
	opts := isolated(t)
	opts.File = writeFile(t, t.TempDir(), "drover.yaml",
		"crawl:\n  per_host: 3\n  hosts:\n    - {pattern: \"*.Example.com\", per_host: 1, min_delay: 5s}\n    - {pattern: localhost, per_host: 0, min_delay: 0}\n")
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []HostRule{{Pattern: "*.example.com", PerHost: 1, MinDelay: 5 * time.Second}, {Pattern: "localhost"}}
	if !reflect.DeepEqual(want, cfg.CrawlHosts) || cfg.Crawl.PerHost != 3 {
		t.Errorf("hosts %+v per_host %d, want %+v and 3", cfg.CrawlHosts, cfg.Crawl.PerHost, want)
	}
	for _, tc := range []struct{ file, want string }{
		{"crawl:\n  hosts:\n    - {pattern: \"a b\"}\n", "crawl.hosts[0].pattern"},
		{"crawl:\n  hosts:\n    - {pattern: a.test}\n    - {pattern: b.test, per_host: -1}\n", "crawl.hosts[1].per_host"},
		{"crawl:\n  hosts:\n    - {pattern: a.test, min_delay: soon}\n", "crawl.hosts[0].min_delay"},
		// The same range as crawl.per_host and crawl.min_delay: one rule.
		{"crawl:\n  hosts:\n    - {pattern: a.test, per_host: 1001}\n", "crawl.hosts[0].per_host"},
		{"crawl:\n  hosts:\n    - {pattern: a.test, min_delay: 2h}\n", "crawl.hosts[0].min_delay"},
		{"crawl:\n  hosts:\n    - {pattern: a.test, delay: 1s}\n", "crawl.hosts[0].delay"},
		{"crawl:\n  hosts:\n    - {per_host: 1}\n", "crawl.hosts[0].pattern"},
		{"crawl:\n  hosts: 5\n", "crawl.hosts"},
	} {
		opts.File = writeFile(t, t.TempDir(), "drover.yaml", tc.file)
		_, err := Load(opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.file, err, tc.want)
		}
	}
}
