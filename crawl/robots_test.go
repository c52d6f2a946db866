package crawl

import (
	"strings"
	"testing"
	"time"
)

func TestRobotsAllowed(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		token string
		path  string
		want  bool
	}{
		{"empty file allows", "", "drover", "/x", true},
		{"disallow all", "User-agent: *\nDisallow: /\n", "drover", "/x", false},
		{"robots.txt always allowed", "User-agent: *\nDisallow: /\n", "drover", "/robots.txt", true},
		{"empty disallow allows", "User-agent: *\nDisallow:\n", "drover", "/x", true},
		{"prefix match", "User-agent: *\nDisallow: /private\n", "drover", "/private/a", false},
		{"prefix match 2", "User-agent: *\nDisallow: /private\n", "drover", "/privateer", false},
		{"no match", "User-agent: *\nDisallow: /private/\n", "drover", "/public", true},
		{"case-sensitive paths", "User-agent: *\nDisallow: /Private/\n", "drover", "/private/x", true},
		{"longest match allow wins", "User-agent: *\nDisallow: /a/\nAllow: /a/b/\n", "drover", "/a/b/c", true},
		{"longest match disallow wins", "User-agent: *\nAllow: /a/\nDisallow: /a/b/\n", "drover", "/a/b/c", false},
		{"tie goes to allow", "User-agent: *\nDisallow: /a\nAllow: /a\n", "drover", "/a", true},
		{"wildcard", "User-agent: *\nDisallow: /*.pdf\n", "drover", "/docs/x.pdf?dl=1", false},
		{"anchored wildcard", "User-agent: *\nDisallow: /*.pdf$\n", "drover", "/docs/x.pdf?dl=1", true},
		{"anchored wildcard match", "User-agent: *\nDisallow: /*.pdf$\n", "drover", "/docs/x.pdf", false},
		{"anchor exact", "User-agent: *\nDisallow: /$\n", "drover", "/", false},
		{"anchor exact other", "User-agent: *\nDisallow: /$\n", "drover", "/a", true},
		{"query matched", "User-agent: *\nDisallow: /*?session=\n", "drover", "/a?session=1", false},
		{"wildcard middle", "User-agent: *\nDisallow: /a*b*c\n", "drover", "/axxbyyc/d", false},
		{"wildcard middle miss", "User-agent: *\nDisallow: /a*b*c\n", "drover", "/axxcyyb", true},
		{"wildcard run", "User-agent: *\nDisallow: /**x$\n", "drover", "/yyyx", false},
		{"own group beats star",
			"User-agent: *\nDisallow: /\n\nUser-agent: drover\nDisallow: /secret\n", "drover", "/public", true},
		{"own group applies",
			"User-agent: *\nDisallow: /\n\nUser-agent: drover\nDisallow: /secret\n", "drover", "/secret", false},
		{"token matched case-insensitively",
			"User-agent: *\nDisallow: /\n\nUser-agent: DROVER\nAllow: /\n", "drover", "/x", true},
		{"version in user-agent line ignored",
			"User-agent: drover/1.0\nDisallow: /x\n", "drover", "/x", false},
		{"other agent's group ignored",
			"User-agent: googlebot\nDisallow: /\n", "drover", "/x", true},
		{"longer token is another agent",
			"User-agent: drover-news\nDisallow: /\n", "drover", "/x", true},
		{"grouped user-agent lines",
			"User-agent: a\nUser-agent: drover\nUser-agent: b\nDisallow: /g\n", "drover", "/g", false},
		{"groups for one agent merge",
			"User-agent: drover\nDisallow: /a\n\nUser-agent: x\nDisallow: /\n\nuser-agent: drover\ndisallow: /b\n", "drover", "/b", false},
		{"star groups not merged into own",
			"User-agent: *\nDisallow: /b\n\nUser-agent: drover\nDisallow: /a\n", "drover", "/b", true},
		{"rules before any group ignored", "Disallow: /\nUser-agent: *\nDisallow: /z\n", "drover", "/a", true},
		{"comments and spaces", "  User-Agent : *   # everyone\n Disallow : /c # no\n", "drover", "/c/d", false},
		{"CR line ends", "User-agent: *\rDisallow: /cr\r", "drover", "/cr", false},
		{"CRLF line ends", "User-agent: *\r\nDisallow: /crlf\r\n", "drover", "/crlf", false},
		{"sitemap does not end a group",
			"User-agent: drover\nSitemap: http://x/s.xml\nUser-agent: other\nDisallow: /s\n", "drover", "/s", false},
		{"percent-encoding case", "User-agent: *\nDisallow: /a%3cb\n", "drover", "/a%3Cb", false},
		{"non-ascii rule", "User-agent: *\nDisallow: /föö\n", "drover", "/f%C3%B6%C3%B6", false},
		{"garbage lines", "<html>\n\x00\x01\nUser-agent *\nDisallow /\n", "drover", "/", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ParseRobots([]byte(tt.body), tt.token)
			if got := r.Allowed(tt.path); got != tt.want {
				t.Errorf("Allowed(%q) = %v, want %v\nrobots.txt:\n%s", tt.path, got, tt.want, tt.body)
			}
		})
	}
}

func TestRobotsCrawlDelay(t *testing.T) {
	tests := []struct {
		body string
		want time.Duration
	}{
		{"User-agent: *\nCrawl-delay: 2\n", 2 * time.Second},
		{"User-agent: *\nCrawl-delay: 0.5\n", 500 * time.Millisecond},
		{"User-agent: *\nCrawl-delay: soon\n", 0},
		{"User-agent: *\nCrawl-delay: -3\n", 0},
		{"User-agent: slowbot\nCrawl-delay: 30\n\nUser-agent: *\nCrawl-delay: 1\n", time.Second},
		{"User-agent: drover\nCrawl-delay: 4\n\nUser-agent: *\nCrawl-delay: 1\n", 4 * time.Second},
		{"Crawl-delay: 9\n", 0},
	}
	for _, tt := range tests {
		if got := ParseRobots([]byte(tt.body), "drover").CrawlDelay; got != tt.want {
			t.Errorf("CrawlDelay of %q = %v, want %v", tt.body, got, tt.want)
		}
	}
}

func TestRobotsZeroAndNil(t *testing.T) {
	var nilRobots *Robots
	if !nilRobots.Allowed("/x") || !(&Robots{}).Allowed("") {
		t.Error("nil or empty Robots must allow everything")
	}
}

func TestRobotsHugeFileIsCut(t *testing.T) {
	// A rule past 512 KiB is not read.
	body := "User-agent: *\n" + strings.Repeat("# padding padding padding\n", robotsMaxBytes/20) + "Disallow: /late\n"
	if !ParseRobots([]byte(body), "drover").Allowed("/late") {
		t.Error("a rule beyond 512 KiB was applied")
	}
	body = "User-agent: *\nDisallow: /early\n" + strings.Repeat("x", 2*robotsMaxBytes)
	if ParseRobots([]byte(body), "drover").Allowed("/early") {
		t.Error("a rule at the start of a huge file was lost")
	}
}

func TestMatchPattern(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/", "/anything", true},
		{"/a$", "/a", true},
		{"/a$", "/ab", false},
		{"*", "", true},
		{"*$", "/x", true},
		{"/*/c", "/a/b/c", true},
		{"/*/c$", "/a/b/cd", false},
		{"/a*", "/b", false},
		{"/a*z", "/abcz", true},
		{"/a*z", "/abc", false},
		{"$", "", true},
		{"$", "/", false},
	}
	for _, tt := range tests {
		if got := matchPattern(tt.pattern, tt.path); got != tt.want {
			t.Errorf("matchPattern(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}
