package crawl

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

func TestBlockedAddress(t *testing.T) {
	for _, c := range []struct {
		ip    string
		class string // empty: allowed
	}{
		{"127.0.0.1", "loopback"}, {"127.8.9.10", "loopback"}, {"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"}, {"::ffff:10.1.2.3", "private"},
		{"10.1.2.3", "private"}, {"172.16.0.1", "private"}, {"172.31.255.255", "private"}, {"192.168.1.1", "private"},
		{"169.254.169.254", "link-local (cloud metadata)"}, {"fd00:ec2::254", "unique-local (cloud metadata)"},
		{"169.254.1.1", "link-local"}, {"fe80::1", "link-local"}, {"fe80::1%eth0", "link-local"},
		{"fc00::1", "unique-local"}, {"fd12:3456::1", "unique-local"},
		{"0.0.0.0", "unspecified"}, {"0.1.2.3", "unspecified"}, {"::", "unspecified"},
		{"100.64.0.1", "shared (CGNAT)"}, {"100.127.255.255", "shared (CGNAT)"},
		{"8.8.8.8", ""}, {"172.32.0.1", ""}, {"100.128.0.1", ""}, {"192.169.0.1", ""}, {"2606:4700::1111", ""},
		{"169.255.0.1", ""}, {"fe00::1", ""},
	} {
		ip := netip.MustParseAddr(c.ip)
		class, blocked := BlockedAddress(ip)
		if class != c.class || blocked != (c.class != "") {
			t.Errorf("BlockedAddress(%s) = %q, %v; want %q", c.ip, class, blocked, c.class)
		}
	}
}

// guardSite serves a seed page on 127.0.0.2, which the test's fetchers
// count as a public address, linking to http://internal.test/secret, and
// the secret on 127.0.0.1 (loopback) under any name. It returns the seed's
// URL, the internal site's port and how often the secret was served.
func guardSite(t *testing.T) (seed string, port string, secretHits *atomic.Int32) {
	t.Helper()
	secretHits = &atomic.Int32{}
	internal := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/secret" {
			secretHits.Add(1)
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<title>secret</title>`)
	}))
	_, port, _ = net.SplitHostPort(internal.Listener.Addr().String())
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 to serve a pretend public site on: %v", err)
	}
	pub := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<a href="http://internal.test:%s/secret">s</a>`, port)
	}))
	pub.Listener.Close()
	pub.Listener = ln
	pub.Start()
	t.Cleanup(pub.Close)
	_, pubPort, _ := net.SplitHostPort(ln.Addr().String())
	return "http://public.test:" + pubPort + "/", port, secretHits
}

// guardFetcher resolves public.test to 127.0.0.2 (counted public) and
// internal.test to 127.0.0.1 (loopback), through the LookupIP hook.
func guardFetcher(t *testing.T, allow bool) *Fetcher {
	t.Helper()
	cfg := testConfig()
	cfg.AllowPrivate = allow
	cfg.LookupIP = func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "public.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
		case "internal.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	f := newFetcher(t, cfg)
	pretendPublic(f, netip.MustParseAddr("127.0.0.2"))
	return f
}

// pretendPublic makes f's guard count ip as a public address.
func pretendPublic(f *Fetcher, ip netip.Addr) {
	f.guard.classify = func(a netip.Addr) (string, bool) {
		if a.Unmap() == ip {
			return "", false
		}
		return BlockedAddress(a)
	}
}

// TestGuardRefusesPrivateLinkOfPublicSeed: the seed on a public address is
// fetched; its link to a host resolving to loopback is refused at connect
// time, the page says why, the server never sees the request, and the
// refusal is counted. With AllowPrivate it is fetched.
func TestGuardRefusesPrivateLinkOfPublicSeed(t *testing.T) {
	seed, port, hits := guardSite(t)
	f := guardFetcher(t, false)
	ctx := WithSeed(context.Background(), seed)
	sp := f.Fetch(ctx, seed)
	link := "http://internal.test:" + port + "/secret"
	if sp.Outcome != OK || sp.Status != 200 || len(sp.Links) != 1 || sp.Links[0] != link {
		t.Fatalf("seed page: %v links %q: want fetched, linking to %s", sp, sp.Links, link)
	}
	p := f.Fetch(ctx, link)
	if p.Outcome != OK || !p.Refused || p.Status != 0 || hits.Load() != 0 {
		t.Fatalf("link to a loopback host from a public seed: %v refused=%v, secret served %d times: want refused, never served", p, p.Refused, hits.Load())
	}
	for _, want := range []string{"internal.test resolves to 127.0.0.1", "loopback", "--allow-private"} {
		if !strings.Contains(p.Err, want) {
			t.Errorf("error %q does not say %q", p.Err, want)
		}
	}
	rec := p.Record(1, "w", 1)
	if head, err := ReadRecordHead(rec.AppendJSON(nil)); err != nil || !head.Refused {
		t.Errorf("record head %+v, %v: want refused", head, err)
	}
	if f.Refused() == 0 {
		t.Error("Refused() = 0 after a refusal")
	}

	allowed := guardFetcher(t, true)
	if p := allowed.Fetch(ctx, link); p.Outcome != OK || p.Status != 200 || p.Refused || hits.Load() == 0 {
		t.Fatalf("with AllowPrivate: %v refused=%v: want fetched", p, p.Refused)
	}
}

// TestGuardPrivateSeedMayGoPrivate: a crawl whose seed is on loopback (the
// user's own site, as the demo's) follows links to other private hosts.
func TestGuardPrivateSeedMayGoPrivate(t *testing.T) {
	_, port, hits := guardSite(t)
	f := guardFetcher(t, false)
	seed := "http://internal.test:" + port + "/"
	ctx := WithSeed(context.Background(), seed)
	if p := f.Fetch(ctx, "http://internal.test:"+port+"/secret"); p.Outcome != OK || p.Status != 200 || hits.Load() != 1 {
		t.Fatalf("link of a loopback seed: %v: want fetched", p)
	}
	// Without WithSeed the URL is its own seed: a loopback URL asked for
	// directly is fetched (the existing tests' servers are all loopback).
	if p := f.Fetch(context.Background(), "http://127.0.0.1:"+port+"/secret"); p.Outcome != OK || p.Status != 200 {
		t.Fatalf("a loopback URL fetched directly: %v: want fetched", p)
	}
}

// TestGuardRedirectToPrivate: a redirect is a link; robots.txt, fetched
// with redirects followed, is refused at a redirect to a private address
// like any connection, and the page says so rather than failing.
func TestGuardRedirectToPrivate(t *testing.T) {
	seed, port, hits := guardSite(t)
	f := guardFetcher(t, false)
	ctx := WithSeed(context.Background(), seed)
	// A robots.txt on the public site that redirects to the internal one.
	redirecting := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://internal.test:"+port+"/secret", http.StatusFound)
	}))
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skip(err)
	}
	redirecting.Listener.Close()
	redirecting.Listener = ln
	redirecting.Start()
	t.Cleanup(redirecting.Close)
	_, rport, _ := net.SplitHostPort(ln.Addr().String())
	p := f.Fetch(ctx, "http://public.test:"+rport+"/page")
	if !p.Refused || hits.Load() != 0 || !strings.Contains(p.Err, "internal.test resolves to 127.0.0.1") {
		t.Fatalf("robots.txt redirected to a loopback host: %v refused=%v, served %d: want refused", p, p.Refused, hits.Load())
	}
}

// TestGuardChecksTheConnectedAddress: a name that looked public when the
// seed was judged and resolves to loopback when connected (DNS rebinding)
// is refused: the check is on the address connected to.
func TestGuardChecksTheConnectedAddress(t *testing.T) {
	_, port, hits := guardSite(t)
	cfg := testConfig()
	var calls atomic.Int32
	cfg.LookupIP = func(context.Context, string) ([]netip.Addr, error) {
		if calls.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil // public, when the seed is judged
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil // then loopback
	}
	f := newFetcher(t, cfg)
	pretendPublic(f, netip.MustParseAddr("127.0.0.2"))
	seed := "http://rebind.test:" + port + "/secret"
	p := f.Fetch(WithSeed(context.Background(), seed), seed)
	if !p.Refused || hits.Load() != 0 {
		t.Fatalf("rebinding name: %v refused=%v, served %d: want refused", p, p.Refused, hits.Load())
	}
	if calls.Load() < 2 {
		t.Fatalf("lookups %d: want the seed check and the connection each to resolve", calls.Load())
	}
}
