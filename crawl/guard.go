package crawl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"syscall"

	"golang.org/x/net/http/httpproxy"
)

// The private-address guard (SSRF): a crawl whose seed is on a public
// address does not connect to loopback, private, link-local (the cloud
// metadata address 169.254.169.254 among them), unique-local, unspecified
// or shared (CGNAT) addresses, whatever name or redirect leads there. The
// check is made on the address actually connected to, in the dialer, so a
// name that resolves to a public address when looked up and to a private
// one when connected (DNS rebinding) is refused too. A crawl whose seed is
// itself on such an address (your own site on localhost or the intranet)
// may go anywhere, as may every crawl with Config.AllowPrivate.

// blockedPrefixes are the ranges the guard refuses, with what they are.
var blockedPrefixes = []struct {
	prefix netip.Prefix
	class  string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "link-local (cloud metadata)"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "unique-local (cloud metadata)"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local"},
}

// BlockedAddress says whether the guard refuses ip, and what kind of
// address it is ("loopback", "private", ...). IPv4-mapped IPv6 addresses
// are judged as the IPv4 address they carry.
func BlockedAddress(ip netip.Addr) (class string, blocked bool) {
	ip = ip.Unmap().WithZone("")
	for _, b := range blockedPrefixes {
		if b.prefix.Contains(ip) {
			return b.class, true
		}
	}
	return "", false
}

// RefusedError is why the guard refused a connection: the host, the
// address it resolved to, and what kind of address that is.
type RefusedError struct {
	Host  string     // as in the URL (or redirect)
	Addr  netip.Addr // the address it resolved to
	Class string     // loopback, private, link-local, ...
}

// Error says what was refused and how to allow it.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("refused: %s resolves to %s, a %s address, and the crawl's seed is on a public one (--allow-private, crawl.allow_private, follows such links)",
		e.Host, e.Addr, e.Class)
}

// seedKey carries the seed of the crawl a fetch belongs to (WithSeed).
type seedKey struct{}

// guardedKey marks a fetch the guard applies to (set by Fetch).
type guardedKey struct{}

// WithSeed says which crawl seed a Fetch or Sitemaps call with ctx works
// for: the guard lets it reach private addresses only when that seed is
// on one. Without it the URL fetched is taken as its own seed (a URL a
// caller asks for directly is one it chose).
func WithSeed(ctx context.Context, seed string) context.Context {
	return withValue(ctx, seedKey{}, seed)
}

// SeedOf returns the seed WithSeed put in ctx, or "".
func SeedOf(ctx context.Context) string {
	s, _ := ctx.Value(seedKey{}).(string)
	return s
}

// guarded reports whether ctx's fetch is under the guard (withGuard).
func guarded(ctx context.Context) bool {
	g, _ := ctx.Value(guardedKey{}).(bool)
	return g
}

// withGuard decides, once per Fetch or Sitemaps call, whether its
// connections are guarded: those of a crawl whose seed (WithSeed, else
// rawURL) is on a public address are.
func (f *Fetcher) withGuard(ctx context.Context, rawURL string) context.Context {
	if _, set := ctx.Value(guardedKey{}).(bool); set {
		return ctx
	}
	seed := SeedOf(ctx)
	if seed == "" {
		seed = rawURL
	}
	return withValue(ctx, guardedKey{}, f.guard.applies(ctx, seed))
}

// transport is the page transport for ctx's fetch: the guarded one or not.
func (f *Fetcher) transport(ctx context.Context) *http.Transport {
	if guarded(ctx) {
		return f.gtr
	}
	return f.tr
}

// client is the robots.txt and sitemap client for ctx's fetch.
func (f *Fetcher) client(ctx context.Context) *http.Client {
	if guarded(ctx) {
		return f.grobotc
	}
	return f.robotc
}

// maxSeedCache bounds the seeds whose address class the Fetcher remembers.
const maxSeedCache = 4096

// guard holds what the Fetcher needs to apply the guard.
type guard struct {
	allow   bool                                                         // Config.AllowPrivate: no guard at all
	hook    func(ctx context.Context, host string) ([]netip.Addr, error) // Config.LookupIP
	lookup  func(ctx context.Context, host string) ([]netip.Addr, error) // hook, or the system resolver
	resolve map[string]string                                            // Config.Resolve
	proxies map[string]bool                                              // host:port of the environment's proxies: connected to as they are
	// classify is BlockedAddress (tests pretend a loopback address public,
	// to have a "public" seed to crawl from).
	classify func(netip.Addr) (string, bool)

	mu      sync.Mutex
	private map[string]bool // seed host:port -> on a private address
	refused uint64          // connections refused
}

func newGuard(cfg Config) *guard {
	g := &guard{allow: cfg.AllowPrivate, hook: cfg.LookupIP, lookup: cfg.LookupIP, resolve: cfg.Resolve,
		private: map[string]bool{}, proxies: map[string]bool{}, classify: BlockedAddress}
	if g.lookup == nil {
		g.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	pc := httpproxy.FromEnvironment()
	for _, p := range []string{pc.HTTPProxy, pc.HTTPSProxy} {
		if u, err := url.Parse(p); err == nil && u.Host != "" {
			g.proxies[hostPort(u)] = true
		}
	}
	return g
}

// applies says whether a fetch for seed must stay off private addresses:
// not when the guard is off or the seed itself is on one.
func (g *guard) applies(ctx context.Context, seed string) bool {
	if g.allow {
		return false
	}
	_, u, err := Parse(seed)
	if err != nil {
		return true
	}
	hp := hostPort(u)
	g.mu.Lock()
	private, known := g.private[hp]
	g.mu.Unlock()
	if known {
		return !private
	}
	private = g.seedPrivate(ctx, hp)
	g.mu.Lock()
	if len(g.private) >= maxSeedCache {
		clear(g.private)
	}
	g.private[hp] = private
	g.mu.Unlock()
	return !private
}

// seedPrivate reports whether the seed at host:port hp is on an address the
// guard refuses: where Config.Resolve pins it, or any address its name
// resolves to.
func (g *guard) seedPrivate(ctx context.Context, hp string) bool {
	if to, ok := g.resolve[hp]; ok {
		hp = to
	}
	host, _, err := net.SplitHostPort(hp)
	if err != nil {
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		_, blocked := g.classify(ip)
		return blocked
	}
	ips, err := g.lookup(ctx, host)
	if err != nil {
		return false // the fetch will say what is wrong with the name
	}
	for _, ip := range ips {
		if _, blocked := g.classify(ip); blocked {
			return true
		}
	}
	return false
}

// dial connects to addr (host:port, after Config.Resolve), refusing
// blocked addresses when on (the guarded transport's dials) unless addr is
// the environment's proxy. host is the URL's, for the error. With a lookup
// hook (Config.LookupIP) names are resolved by it; the check is on the
// address connected to either way.
func (g *guard) dial(ctx context.Context, d *net.Dialer, on bool, network, host, addr string) (net.Conn, error) {
	dd := *d
	if on && !g.proxies[addr] {
		dd.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("guard: connecting to %q: want ip:port", address)
			}
			if class, blocked := g.classify(ap.Addr()); blocked {
				g.mu.Lock()
				g.refused++
				g.mu.Unlock()
				return &RefusedError{Host: host, Addr: ap.Addr().Unmap(), Class: class}
			}
			return nil
		}
	}
	if g.hook == nil {
		return dd.DialContext(ctx, network, addr)
	}
	h, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return dd.DialContext(ctx, network, addr)
	}
	ips, err := g.hook(ctx, h)
	if err != nil {
		return nil, &net.DNSError{Err: err.Error(), Name: h}
	}
	var errs []error
	for _, ip := range ips {
		c, err := dd.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: h, IsNotFound: true}
	}
	return nil, errors.Join(errs...)
}

// Refused returns how many connections the guard has refused.
func (f *Fetcher) Refused() uint64 {
	f.guard.mu.Lock()
	defer f.guard.mu.Unlock()
	return f.guard.refused
}
