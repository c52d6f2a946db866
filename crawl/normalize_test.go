package crawl

import (
	"errors"
	"testing"

	"drover/coord/id"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "http://example.com", want: "http://example.com/"},
		{in: "HTTP://Example.COM:80/a/./b/../c#frag", want: "http://example.com/a/c"},
		{in: "https://example.com:443/", want: "https://example.com/"},
		{in: "https://example.com:80/", want: "https://example.com:80/"},
		{in: "http://example.com:8080/x?q=1#f", want: "http://example.com:8080/x?q=1"},
		{in: "http://example.com/a/b/../../../c", want: "http://example.com/c"},
		{in: "http://example.com/dir/.", want: "http://example.com/dir/"},
		{in: "http://example.com/%7Efred/a%2Fb", want: "http://example.com/~fred/a%2Fb"},
		{in: "http://[::1]:80/", want: "http://[::1]/"},
		{in: "http://[::1]:8080/x", want: "http://[::1]:8080/x"},
		{in: "  http://example.com/ ", want: "http://example.com/"},
		{in: "http://example.com/?", want: "http://example.com/?"},
		{in: "mailto:a@example.com", bad: true},
		{in: "javascript:alert(1)", bad: true},
		{in: "ftp://example.com/", bad: true},
		{in: "/relative/path", bad: true},
		{in: "http:///nohost", bad: true},
		{in: "http://exa mple.com/", bad: true},
		{in: "http://example.com/%zz", bad: true},
		{in: "http:opaque", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if tt.bad {
				if err == nil {
					t.Fatalf("Normalize(%q) = %q, want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Normalize(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			again, err := Normalize(got)
			if err != nil || again != got {
				t.Errorf("Normalize is not idempotent: %q -> %q (%v)", got, again, err)
			}
		})
	}
}

func TestNormalizeErrorType(t *testing.T) {
	_, err := Normalize("gopher://example.com/")
	var ue *id.URLError
	if !errors.As(err, &ue) {
		t.Errorf("error %v is not an *id.URLError", err)
	}
	if _, _, err := Parse("gopher://example.com/"); !errors.As(err, &ue) {
		t.Errorf("Parse error %v is not an *id.URLError", err)
	}
}

func TestParseAgreesWithNormalize(t *testing.T) {
	s, u, err := Parse("HTTP://Example.COM:80/a b/./c?q=%7e#f")
	if err != nil {
		t.Fatal(err)
	}
	if u.String() != s || u.Host != "example.com" || u.Fragment != "" {
		t.Errorf("Parse = %q, %#v", s, u)
	}
}
