package cli

import (
	"strings"
	"testing"
	"time"

	"drover/crawl"
)

func TestPolitenessText(t *testing.T) {
	sec := time.Second
	tests := []struct {
		waited time.Duration
		p      crawl.Politeness
		short  bool
		want   []string // "" for no note
	}{
		{50 * time.Millisecond, crawl.Politeness{Delay: sec}, false, nil},
		{3 * sec, crawl.Politeness{Delay: sec}, false, []string{"slowed by politeness", "1s between fetches on a host", "--crawl-min-delay", "3s"}},
		{3 * sec, crawl.Politeness{Delay: 5 * sec, CrawlDelay: true}, false, []string{"Crawl-delay of 5s", "--ignore-robots"}},
		{3 * sec, crawl.Politeness{}, false, []string{"--per-host"}},
		{3 * sec, crawl.Politeness{Delay: sec}, true, []string{"1s/host", "--crawl-min-delay"}},
	}
	for _, tt := range tests {
		got := politenessText(tt.waited, sec, tt.p, tt.short)
		if tt.want == nil {
			if got != "" {
				t.Errorf("waited %v: %q, want no note", tt.waited, got)
			}
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("waited %v %+v: %q does not say %q", tt.waited, tt.p, got, w)
			}
		}
	}
}
