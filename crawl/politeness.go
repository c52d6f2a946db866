package crawl

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Politeness is what the per-host limits have cost a Fetcher so far: how
// often and how long fetches waited for a free slot on their host
// (Config.PerHost) or for its delay (Config.MinDelay, or a robots.txt
// Crawl-delay).
type Politeness struct {
	// Waits counts the fetches that had to wait.
	Waits int64
	// Waited is their total waiting time.
	Waited time.Duration
	// Delay is the delay between fetch starts on the host of the latest
	// fetch that waited, and CrawlDelay says it came from robots.txt.
	Delay      time.Duration
	CrawlDelay bool
}

// politeness holds a Fetcher's Politeness counters.
type politeness struct {
	waits, waitedNS, delayNS atomic.Int64
	crawlDelay               atomic.Bool
}

// Politeness returns the politeness waits so far.
func (f *Fetcher) Politeness() Politeness {
	return Politeness{
		Waits:      f.polite.waits.Load(),
		Waited:     time.Duration(f.polite.waitedNS.Load()),
		Delay:      time.Duration(f.polite.delayNS.Load()),
		CrawlDelay: f.polite.crawlDelay.Load(),
	}
}

// acquire waits for a fetch slot on u's host h and for the host's delay:
// max(MinDelay, rb's Crawl-delay capped at MaxCrawlDelay), MinDelay being
// 0 for a local host under Config.LocalNoDelay. It counts what the wait
// cost in the Fetcher's Politeness.
func (f *Fetcher) acquire(ctx context.Context, h *hostState, u *url.URL, rb *Robots) (release func(), err error) {
	minDelay := f.cfg.MinDelay
	if f.cfg.LocalNoDelay && minDelay > 0 && f.isLocal(ctx, h, u) {
		minDelay = 0
	}
	var crawlDelay time.Duration
	if rb != nil {
		crawlDelay = min(rb.CrawlDelay, f.cfg.MaxCrawlDelay)
	}
	delay := max(minDelay, crawlDelay)
	start := f.clock.Now()
	release, err = h.acquire(ctx, f.clock, delay)
	if waited := f.clock.Now().Sub(start); err == nil && waited > 0 {
		f.polite.waits.Add(1)
		f.polite.waitedNS.Add(int64(waited))
		f.polite.delayNS.Store(int64(delay))
		f.polite.crawlDelay.Store(crawlDelay > minDelay)
	}
	return release, err
}

// isLocal reports whether u's host is on loopback or a private network:
// an IP literal or a Resolve pin to such an address, localhost or a
// *.localhost name, or a name whose addresses all are such. The answer is
// kept with the host's state; a name that does not resolve is not local.
func (f *Fetcher) isLocal(ctx context.Context, h *hostState, u *url.URL) bool {
	h.mu.Lock()
	known, local := h.localKnown, h.local
	h.mu.Unlock()
	if known {
		return local
	}
	local = f.lookupLocal(ctx, u)
	h.mu.Lock()
	h.localKnown, h.local = true, local
	h.mu.Unlock()
	return local
}

func (f *Fetcher) lookupLocal(ctx context.Context, u *url.URL) bool {
	name := u.Hostname()
	if to, ok := f.cfg.Resolve[hostPort(u)]; ok {
		if host, _, err := net.SplitHostPort(to); err == nil {
			name = host
		}
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		return isLocalAddr(ip)
	}
	if IsLocalHost(name) {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.ConnectTimeout)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !isLocalAddr(ip) {
			return false
		}
	}
	return true
}

// IsLocalHost reports whether a host (a name or an IP literal, with or
// without a port, as in a host key) names the local machine or a private
// network by its spelling alone, without a lookup: localhost,
// *.localhost, or a loopback, private or link-local IP literal. The
// coordinator's politeness spares such hosts its default delay.
func IsLocalHost(host string) bool {
	h := strings.ToLower(host)
	if name, _, err := net.SplitHostPort(h); err == nil {
		h = name
	}
	h = strings.TrimSuffix(h, ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i] // a zone
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && isLocalAddr(ip)
}

// isLocalAddr reports whether ip is loopback, private (RFC 1918, RFC
// 4193) or link-local.
func isLocalAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast()
}
