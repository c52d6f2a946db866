package crawl

import (
	"net/url"
	"testing"

	"drover/coord/id"
)

func TestScopeAllows(t *testing.T) {
	tests := []struct {
		scope     Scope
		seed, url string
		want      bool
	}{
		{ScopeHost, "http://example.com/", "http://example.com/a", true},
		{ScopeHost, "http://example.com/", "https://EXAMPLE.com:443/a", true},
		{ScopeHost, "http://example.com/", "http://example.com:80/a", true},
		{ScopeHost, "http://example.com/", "http://example.com:8080/a", false},
		{ScopeHost, "http://example.com/", "http://www.example.com/", false},
		{ScopeHost, "http://example.com/", "http://other.org/", false},
		{ScopeHost, "http://127.0.0.1:5000/", "http://127.0.0.1:5001/", false},
		{ScopeHost, "http://example.com/", "mailto:x@example.com", false},
		{ScopeHost, "not a url", "http://example.com/", false},
		{"", "http://example.com/", "http://example.com/b", true},
		{ScopeDomain, "http://www.example.com/", "http://example.com/", true},
		{ScopeDomain, "http://www.example.com/", "http://blog.example.com/x", true},
		{ScopeDomain, "http://www.example.com/", "http://a.b.example.com:8080/x", true},
		{ScopeDomain, "http://example.com/", "http://www.example.com/", true},
		{ScopeDomain, "http://example.com/", "http://badexample.com/", false},
		{ScopeDomain, "http://example.com/", "http://example.com.evil.org/", false},
		{ScopeDomain, "http://blog.example.com/", "http://example.com/", false},
		{ScopeDomain, "http://blog.example.com/", "http://x.blog.example.com/", true},
		{ScopeDomain, "http://10.0.0.1/", "http://1.10.0.0.1/", false},
		{ScopeDomain, "http://10.0.0.1/", "http://10.0.0.1:81/", true},
		{ScopePrefix, "http://example.com/docs/intro.html", "http://example.com/docs/a/b", true},
		{ScopePrefix, "http://example.com/docs/intro.html", "http://example.com/docs/", true},
		{ScopePrefix, "http://example.com/docs/intro.html", "http://example.com/docsx", false},
		{ScopePrefix, "http://example.com/docs/intro.html", "http://example.com/", false},
		{ScopePrefix, "http://example.com/docs", "http://example.com/docsx", true},
		{ScopePrefix, "http://example.com/docs/?q=1", "http://example.com/docs/x", true},
		{ScopePrefix, "http://example.com/docs/", "http://EXAMPLE.com:80/docs/./y#f", true},
		{ScopePrefix, "http://example.com/docs/", "https://example.com/docs/y", false},
		{ScopePrefix, "http://example.com/docs/", "http://example.com/docs/../etc", false},
		{ScopeHost, "http://user:pw@example.com/", "http://example.com/a", true},
		{ScopeHost, "http://[::1]:8080/", "http://[0:0::1]:8080/x", true},
		{ScopeHost, "http://[::1]:8080/", "http://[::1]:8081/x", false},
		{ScopeDomain, "http://[::1]/", "http://[::1]:81/", true},
		{ScopeDomain, "http://www.example.com:8080/", "http://u@blog.example.com/", true},
	}
	for _, tt := range tests {
		t.Run(string(tt.scope)+" "+tt.seed+" "+tt.url, func(t *testing.T) {
			if got := tt.scope.Allows(tt.seed, tt.url); got != tt.want {
				t.Errorf("%q.Allows(%q, %q) = %v, want %v", tt.scope, tt.seed, tt.url, got, tt.want)
			}
		})
	}
}

func TestParseScope(t *testing.T) {
	tests := []struct {
		in   string
		want Scope
		bad  bool
	}{
		{"host", ScopeHost, false},
		{"", ScopeHost, false},
		{" Domain ", ScopeDomain, false},
		{"PREFIX", ScopePrefix, false},
		{"hosts", "", true},
	}
	for _, tt := range tests {
		got, err := ParseScope(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("ParseScope(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.bad)
		}
		var s Scope
		if err := s.Set(tt.in); (err != nil) != tt.bad || (!tt.bad && s != tt.want) {
			t.Errorf("Set(%q) gave %q, %v", tt.in, s, err)
		}
	}
}

// TestHostnameMatchesURLParse checks the string reading of hosts that the
// scopes use against net/url on URLs in normal form.
func TestHostnameMatchesURLParse(t *testing.T) {
	for _, raw := range []string{
		"http://example.com/", "http://example.com:8080/a?b#c", "https://u:p@Example.com:444/",
		"http://[::1]/", "http://[2001:DB8::1]:8080/x", "http://127.0.0.1:5000", "http://a%40b@c.example/",
		"http://xn--bcher-kva.example/", "http://example.com?q=/x", "http://h:65535#f",
	} {
		norm, err := Normalize(raw)
		if err != nil {
			t.Errorf("Normalize(%q): %v", raw, err)
			continue
		}
		u, err := url.Parse(norm)
		if err != nil {
			t.Fatalf("url.Parse(%q): %v", norm, err)
		}
		if got := id.Host(norm); got != u.Host {
			t.Errorf("id.Host(%q) = %q, url.Parse says %q", norm, got, u.Host)
		}
		if got := hostname(id.Host(norm)); got != u.Hostname() {
			t.Errorf("hostname(%q) = %q, url.Parse says %q", norm, got, u.Hostname())
		}
	}
}
