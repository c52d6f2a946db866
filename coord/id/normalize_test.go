package id

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"already normal", "http://example.com/a/b?x=1", "http://example.com/a/b?x=1"},
		{"scheme and host lower-cased", "HTTP://Example.COM/Path", "http://example.com/Path"},
		{"https", "HTTPS://EXAMPLE.com/", "https://example.com/"},
		{"empty path", "http://example.com", "http://example.com/"},
		{"empty path with query", "http://example.com?a=1", "http://example.com/?a=1"},
		{"default http port", "http://example.com:80/x", "http://example.com/x"},
		{"default https port", "https://example.com:443/x", "https://example.com/x"},
		{"443 on http kept", "http://example.com:443/", "http://example.com:443/"},
		{"80 on https kept", "https://example.com:80/", "https://example.com:80/"},
		{"other port kept", "http://example.com:8080/", "http://example.com:8080/"},
		{"port leading zeros", "http://example.com:0080/", "http://example.com/"},
		{"port leading zeros kept value", "http://example.com:08080/", "http://example.com:8080/"},
		{"empty port", "http://example.com:/", "http://example.com/"},
		{"fragment dropped", "http://example.com/a#top", "http://example.com/a"},
		{"fragment after query", "http://example.com/a?b=1#c", "http://example.com/a?b=1"},
		{"only fragment", "http://example.com#x", "http://example.com/"},
		{"dot segments", "http://example.com/a/./b/../c", "http://example.com/a/c"},
		{"rfc 5.4 example", "http://a/b/c/./../../g", "http://a/g"},
		{"dot-dot above root", "http://a/../../g", "http://a/g"},
		{"trailing dot", "http://a/b/.", "http://a/b/"},
		{"trailing dot-dot", "http://a/b/c/..", "http://a/b/"},
		{"dots inside names kept", "http://a/.x/..y/z.", "http://a/.x/..y/z."},
		{"escaped dot segment", "http://a/b/%2e%2E/c", "http://a/c"},
		{"double slash kept", "http://a//b//c", "http://a//b//c"},
		{"hex upper-cased", "http://a/%3a%2f", "http://a/%3A%2F"},
		{"unreserved decoded", "http://a/%7Euser/%41%62", "http://a/~user/Ab"},
		{"unreserved decoded in query", "http://a/?q=%7e%2d", "http://a/?q=~-"},
		{"reserved kept encoded in query", "http://a/?q=%26%3d", "http://a/?q=%26%3D"},
		{"space encoded", "http://a/b c?d e", "http://a/b%20c?d%20e"},
		{"non-ascii encoded", "http://a/café", "http://a/caf%C3%A9"},
		{"brackets in path encoded", "http://a/[x]", "http://a/%5Bx%5D"},
		{"query order kept", "http://a/?b=2&a=1&b=1", "http://a/?b=2&a=1&b=1"},
		{"empty query kept", "http://a/?", "http://a/?"},
		{"query dots kept", "http://a/?p=/../x", "http://a/?p=/../x"},
		{"question mark in query", "http://a/?x?y", "http://a/?x?y"},
		{"plus kept", "http://a/a+b?c+d", "http://a/a+b?c+d"},
		{"userinfo kept as is", "http://User:P%2fss@Example.com/", "http://User:P%2fss@example.com/"},
		{"at sign in path", "http://a/@b", "http://a/@b"},
		{"ipv4 host", "http://127.0.0.1:8080/", "http://127.0.0.1:8080/"},
		{"ipv6 loopback", "http://[::1]/", "http://[::1]/"},
		{"ipv6 upper-case and port", "http://[2001:DB8::1]:8080/", "http://[2001:db8::1]:8080/"},
		{"ipv6 default port", "https://[2001:db8::1]:443", "https://[2001:db8::1]/"},
		{"ipv6 full form compressed", "http://[2001:0db8:0000:0000:0000:0000:0000:0001]/", "http://[2001:db8::1]/"},
		{"ipv6 longest zero run", "http://[2001:0:0:1:0:0:0:1]/", "http://[2001:0:0:1::1]/"},
		{"ipv6 first run on tie", "http://[2001:db8:0:0:1:0:0:1]/", "http://[2001:db8::1:0:0:1]/"},
		{"ipv6 single zero group not compressed", "http://[2001:db8:0:1:1:1:1:1]/", "http://[2001:db8:0:1:1:1:1:1]/"},
		{"ipv6 all zeros", "http://[0:0:0:0:0:0:0:0]/", "http://[::]/"},
		{"ipv6 v4-mapped", "http://[::FFFF:c000:0280]/", "http://[::ffff:192.0.2.128]/"},
		{"ipv6 dotted tail", "http://[64:ff9b::192.0.2.33]/", "http://[64:ff9b::c000:221]/"},
		{"ipv6 zone kept", "http://[FE80::1%25Eth0]/", "http://[fe80::1%25Eth0]/"},
		{"host escape of unreserved", "http://%41%62c.com/", "http://abc.com/"},
		{"host non-ascii escaped upper", "http://caf%c3%a9.example/", "http://caf%C3%A9.example/"},
		{"host raw non-ascii escaped", "http://café.example/", "http://caf%C3%A9.example/"},
		{"host trailing dot kept", "http://example.com./", "http://example.com./"},
		{"host sub-delims", "http://a!b/", "http://a!b/"},
		{"mixed-case scheme", "HtTp://a", "http://a/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if err != nil {
				t.Fatalf("Normalize(%q): %v; want %q", tt.in, err, tt.want)
			}
			if got != tt.want {
				t.Fatalf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			again, err := Normalize(got)
			if err != nil || again != got {
				t.Fatalf("Normalize(%q) = %q, %v; want it unchanged (idempotence)", got, again, err)
			}
		})
	}
}

func TestNormalizeRejects(t *testing.T) {
	tests := []struct {
		name, in, wantInErr string
	}{
		{"empty", "", "no scheme"},
		{"relative", "/a/b", "no scheme"},
		{"scheme-relative", "//example.com/", "no scheme"},
		{"no colon", "example.com", "no scheme"},
		{"ftp", "ftp://example.com/", `scheme "ftp" is not supported`},
		{"mailto", "mailto:a@b.c", `scheme "mailto" is not supported`},
		{"javascript", "javascript:alert(1)", `scheme "javascript"`},
		{"scheme starting with digit", "1http://a/", "no scheme"},
		{"no authority", "http:/a/b", "missing host"},
		{"opaque", "http:example.com", "missing host"},
		{"empty host", "http:///a", "missing host"},
		{"empty host with port", "http://:80/", "missing host"},
		{"userinfo without host", "http://user@/", "missing host"},
		{"port not number", "http://a:http/", "not a number"},
		{"port with sign", "http://a:+80/", "not a number"},
		{"two colons", "http://a:80:80/", "not a number"},
		{"port too big", "http://a:65536/", "out of range"},
		{"port huge", "http://a:99999999999999999999/", "out of range"},
		{"port zero", "http://a:0/", "port 0"},
		{"control char", "http://a/\x00", "control character"},
		{"tab", "http://a/\tb", "control character"},
		{"newline", "http://a/\nb", "control character"},
		{"del", "http://a/\x7f", "control character"},
		{"control char in fragment", "http://a/#\x01", "control character"},
		{"bad escape in path", "http://a/%zz", "invalid percent escape"},
		{"short escape in path", "http://a/%4", "invalid percent escape"},
		{"bare percent", "http://a/100%", "invalid percent escape"},
		{"bad escape in query", "http://a/?q=%g0", "invalid percent escape"},
		{"bad escape in host", "http://a%2/", "invalid percent escape"},
		{"escaped slash in host", "http://a%2Fb/", "escaped '/'"},
		{"space in host", "http://a b/", "host contains ' '"},
		{"bracket in reg-name", "http://a]b/", "host contains ']'"},
		{"bad char in userinfo", "http://a b@c/", "userinfo contains ' '"},
		{"bad escape in userinfo", "http://a%zz@c/", "invalid percent escape in userinfo"},
		{"unclosed ipv6", "http://[::1/", "no closing"},
		{"junk after ipv6", "http://[::1]x/", "after the IPv6 host"},
		{"not ipv6", "http://[example.com]/", "not an IPv6 address"},
		{"ipv4 in brackets", "http://[127.0.0.1]/", "not an IPv6 address"},
		{"ipvfuture", "http://[v1.fe]/", "not an IPv6 address"},
		{"ipv6 two ellipses", "http://[1::2::3]/", "not an IPv6 address"},
		{"ipv6 too many groups", "http://[1:2:3:4:5:6:7:8:9]/", "not an IPv6 address"},
		{"ipv6 too few groups", "http://[1:2:3:4:5:6:7]/", "not an IPv6 address"},
		{"ipv6 ellipsis for nothing", "http://[1:2:3:4::5:6:7:8]/", "not an IPv6 address"},
		{"ipv6 long group", "http://[12345::1]/", "not an IPv6 address"},
		{"ipv6 trailing colon", "http://[1::2:]/", "not an IPv6 address"},
		{"ipv6 leading single colon", "http://[:1::2]/", "not an IPv6 address"},
		{"ipv6 bad dotted tail", "http://[::1.2.3.256]/", "not an IPv6 address"},
		{"ipv6 dotted tail leading zero", "http://[::1.2.3.04]/", "not an IPv6 address"},
		{"ipv6 dotted tail not last", "http://[::1.2.3.4:1]/", "not an IPv6 address"},
		{"ipv6 empty", "http://[]/", "not an IPv6 address"},
		{"ipv6 zone without 25", "http://[fe80::1%eth0]/", "introduced by %25"},
		{"ipv6 empty zone", "http://[fe80::1%25]/", "empty IPv6 zone"},
		{"ipv6 bad zone char", "http://[fe80::1%25e!0]/", "IPv6 zone contains"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if err == nil {
				t.Fatalf("Normalize(%q) = %q; want an error containing %q", tt.in, got, tt.wantInErr)
			}
			if !strings.Contains(err.Error(), tt.wantInErr) {
				t.Fatalf("Normalize(%q) error %q; want it to contain %q", tt.in, err, tt.wantInErr)
			}
			var ue *URLError
			if !errors.As(err, &ue) {
				t.Fatalf("Normalize(%q) error %T; want *URLError", tt.in, err)
			}
			if !strings.Contains(err.Error(), "want") && !strings.Contains(err.Error(), "not supported") {
				t.Fatalf("Normalize(%q) error %q does not say what was expected", tt.in, err)
			}
		})
	}
}

func TestURLErrorShortensLongURLs(t *testing.T) {
	long := "ftp://example.com/" + strings.Repeat("x", 10000)
	_, err := Normalize(long)
	var ue *URLError
	if !errors.As(err, &ue) {
		t.Fatalf("Normalize(long ftp URL) error = %v; want *URLError", err)
	}
	if len(ue.URL) > 210 || !strings.HasPrefix(ue.URL, "ftp://example.com/") {
		t.Fatalf("URLError.URL has %d bytes (%q...); want the URL cut to about 200", len(ue.URL), ue.URL[:20])
	}
}

func TestNewKey(t *testing.T) {
	k, err := NewKey("news", "html", "HTTP://Example.com:80/a/../b#x")
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	want := Key{"news", "html", "http://example.com/b"}
	if k != want {
		t.Fatalf("NewKey = %+v, want %+v", k, want)
	}
	k2, _ := NewKey("news", "html", "http://EXAMPLE.com/b")
	if k.Fingerprint() != k2.Fingerprint() {
		t.Fatalf("two spellings of one page have fingerprints %s and %s; want one", k.Fingerprint(), k2.Fingerprint())
	}
	if _, err := NewKey("news", "html", "ftp://x/"); err == nil {
		t.Fatal("NewKey with an ftp URL succeeded; want an error")
	}
}

func TestHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://example.com/a", "example.com"},
		{"http://example.com:8080/a?b", "example.com:8080"},
		{"http://example.com?q", "example.com"},
		{"http://user:pw@example.com/", "example.com"},
		{"http://[::1]:8080/", "[::1]:8080"},
		{"https://[fe80::1%25eth0]/", "[fe80::1%25eth0]"},
		{"http://example.com", "example.com"},
		{"example.com/a", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Host(tt.in); got != tt.want {
			t.Errorf("Host(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// pctDecode decodes every %XX (the input comes from Normalize, so escapes are valid).
func pctDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// checkAgainstNetURL is the property both the fuzz test and the seeds check:
// a normalised URL is a fixed point, and net/url reads the same scheme, host
// and path from it.
func checkAgainstNetURL(t *testing.T, in string) {
	t.Helper()
	checkFastPath(t, in)
	out, err := Normalize(in)
	if err != nil {
		var ue *URLError
		if !errors.As(err, &ue) {
			t.Fatalf("Normalize(%q) error %T %v; want *URLError", in, err, err)
		}
		return
	}
	again, err := Normalize(out)
	if err != nil || again != out {
		t.Fatalf("Normalize(%q) = %q; Normalize of that = %q, %v; want it unchanged", in, out, again, err)
	}
	u, err := url.Parse(out)
	if err != nil {
		t.Fatalf("Normalize(%q) = %q, which net/url refuses: %v", in, out, err)
	}
	scheme := out[:strings.Index(out, "://")]
	if u.Scheme != scheme {
		t.Fatalf("%q: net/url scheme %q, want %q", out, u.Scheme, scheme)
	}
	if want := pctDecode(Host(out)); u.Host != want {
		t.Fatalf("%q: net/url host %q, want %q", out, u.Host, want)
	}
	rest := out[len(scheme)+3:]
	path := rest[strings.IndexByte(rest, '/'):]
	if q := strings.IndexByte(path, '?'); q >= 0 {
		path = path[:q]
	}
	if want := pctDecode(path); u.Path != want {
		t.Fatalf("%q: net/url path %q, want %q", out, u.Path, want)
	}
	if u.EscapedPath() != path {
		t.Fatalf("%q: net/url escaped path %q, want %q", out, u.EscapedPath(), path)
	}
	if u.Fragment != "" {
		t.Fatalf("%q: net/url fragment %q, want none", out, u.Fragment)
	}
}

// checkFastPath: Normalize's fast path gives what the full rules give,
// and takes only URLs that are their own normal form.
func checkFastPath(t *testing.T, in string) {
	t.Helper()
	full, fullErr := normalize(in)
	if isPlainNormal(in) && (fullErr != nil || full != in) {
		t.Fatalf("isPlainNormal(%q), but the full rules give %q, %v", in, full, fullErr)
	}
	out, err := Normalize(in)
	if out != full || (err == nil) != (fullErr == nil) {
		t.Fatalf("Normalize(%q) = %q, %v; the full rules give %q, %v", in, out, err, full, fullErr)
	}
}

// The fast path takes the plain normal URLs and leaves every near miss
// to the full rules, which agree with it either way.
func TestNormalizeFastPath(t *testing.T) {
	for _, tc := range []struct {
		in    string
		plain bool
	}{
		{"http://a.example.com/section/page-123?x=1", true},
		{"https://host-3.example.com/section/7/page-1.html", true},
		{"http://a/", true},
		{"http://a/b?", true},
		{"http://a/b?c=d/e?f&g=h;i@j:k", true},
		{"http://a_b~c/x:y@z!$&'()*+,;=", true},
		{"http://a", false},         // the empty path becomes "/"
		{"http://a?x", false},       // likewise
		{"HTTP://a/", false},        // scheme case
		{"http://A/", false},        // host case
		{"http://a:80/", false},     // default port
		{"http://a:8080/", false},   // a port: the full way
		{"http://u@a/", false},      // userinfo
		{"http://[::1]/", false},    // IPv6
		{"http://a/%7e", false},     // an escape
		{"http://a/b?%41", false},   // an escape in the query
		{"http://a/./b", false},     // a dot segment
		{"http://a/b/..", false},    // another
		{"http://a/.hidden", false}, // not one, but left to the full way
		{"http://a/b#f", false},     // a fragment
		{"http://a/b c", false},     // a byte to escape
		{"http://a/\x01", false},    // a control character
		{"http://a/\u00e4", false},  // non-ASCII
		{"http://a/b?c d", false},   // a byte to escape in the query
		{"ftp://a/", false},         // another scheme
		{"http:///", false},         // no host
		{"http://", false},          // nothing
		{"https://a.example.com/", true},
	} {
		if got := isPlainNormal(tc.in); got != tc.plain {
			t.Errorf("isPlainNormal(%q) = %v, want %v", tc.in, got, tc.plain)
		}
		checkFastPath(t, tc.in)
	}
}

var fuzzSeeds = []string{
	"http://example.com/a/b?x=1",
	"HTTP://Example.COM:80/./a/../b/%7e?q=%2f#frag",
	"https://user:pw@[2001:DB8::1]:8443/p%41th",
	"http://[fe80::1%25eth0]/",
	"http://a/b c/ä?x y",
	"http://a/%2e%2E/../.../",
	"http://a:/",
	"http://caf%C3%A9.example/",
	"http://[::ffff:1.2.3.4]/",
	"http://a/[]{}|^`\\\"<>",
	"ftp://x/",
	"http://a/%",
}

func TestNormalizeSeedsAgainstNetURL(t *testing.T) {
	for _, s := range fuzzSeeds {
		checkAgainstNetURL(t, s)
	}
}

// FuzzNormalize checks, on any input, that Normalize either refuses with a
// *URLError or returns a fixed point that net/url reads the same way.
func FuzzNormalize(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		checkAgainstNetURL(t, in)
	})
}

// BenchmarkNormalize: a URL already in normal form (the common case: links
// a worker normalised) costs no allocation; one that changes costs one.
func BenchmarkNormalize(b *testing.B) {
	for _, tc := range []struct{ name, url string }{
		{"normal", "http://a.example.com/section/page-123?x=1"},
		{"changes", "HTTP://A.Example.COM:80/section/./page-123?x=1#top"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Normalize(tc.url); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// An already normal URL comes back as the very string given.
func TestNormalizeSharesNormalInput(t *testing.T) {
	in := "http://a.example.com/p?q=1"
	out, err := Normalize(in)
	if err != nil || out != in {
		t.Fatalf("Normalize(%q) = %q, %v", in, out, err)
	}
	if n := testing.AllocsPerRun(100, func() { Normalize(in) }); n != 0 {
		t.Fatalf("%v allocations for a normal URL, want 0", n)
	}
}
