package crawl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strings"
	"time"
)

// Defaults used by DefaultConfig.
const (
	DefaultContactURL     = "https://github.com/drover/drover"
	DefaultConnectTimeout = 10 * time.Second
	DefaultTimeout        = 30 * time.Second
	DefaultMaxBodyBytes   = 10 << 20
	DefaultPerHost        = 2
	DefaultMinDelay       = 100 * time.Millisecond
	DefaultMaxCrawlDelay  = 30 * time.Second
	DefaultRobotsTTL      = 24 * time.Hour
	DefaultMaxDepth       = 10
)

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("invalid crawl config")

// Config holds the settings of a crawl. Start from DefaultConfig and change
// what you need; Validate checks every field and names the one that is
// wrong. The mapstructure tags are the keys viper reads it under
// (durations as "300ms", "10s").
type Config struct {
	// Version is drover's version, used in the default User-Agent.
	Version string `mapstructure:"version"`
	// ContactURL is where a site owner learns who is crawling; it appears
	// in the default User-Agent as "(+URL)".
	ContactURL string `mapstructure:"contact-url"`
	// UserAgent is sent with every request. Empty means
	// "drover/<Version> (+<ContactURL>)". Its product token (the part
	// before the first "/" or space) selects the robots.txt group.
	UserAgent string `mapstructure:"user-agent"`
	// ConnectTimeout bounds establishing a connection (dial and TLS).
	ConnectTimeout time.Duration `mapstructure:"connect-timeout"`
	// Timeout bounds one whole fetch: connect, request, headers and body.
	Timeout time.Duration `mapstructure:"timeout"`
	// MaxBodyBytes is how much of a body is read; the rest is dropped and
	// Page.Truncated is set.
	MaxBodyBytes int64 `mapstructure:"max-body-bytes"`
	// PerHost is the most concurrent fetches to one host (host:port); 0
	// sets no limit (a fleet's coordinator holds the limits: issue 22).
	PerHost int `mapstructure:"per-host"`
	// Parallel is the most fetches the process runs at once with this
	// config (a worker's slots, all of drover crawl's local workers'); 0:
	// not known. With PerHost it bounds the fetches to one host, and so the
	// idle connections kept open to a host for the next fetch: were there
	// fewer than the fetches that end together, the others' connections
	// would be closed and dialled again for the next pages.
	Parallel int `mapstructure:"-"`
	// MinDelay is the least time between two fetch starts on one host. A
	// robots.txt Crawl-delay above it wins, up to MaxCrawlDelay.
	MinDelay time.Duration `mapstructure:"min-delay"`
	// LocalNoDelay drops MinDelay for hosts on loopback or private
	// addresses (an IP literal, localhost, a Resolve pin or a name whose
	// every address is such): a local site is the user's own. A robots.txt
	// Crawl-delay still applies to them.
	LocalNoDelay bool `mapstructure:"local-no-delay"`
	// MaxCrawlDelay caps a robots.txt Crawl-delay, so that one site cannot
	// stall a worker's slots for minutes per page.
	MaxCrawlDelay time.Duration `mapstructure:"max-crawl-delay"`
	// RobotsTTL is how long a fetched robots.txt is trusted (RFC 9309 asks
	// for at most 24 hours).
	RobotsTTL time.Duration `mapstructure:"robots-ttl"`
	// Scope says which discovered links belong to the crawl.
	Scope Scope `mapstructure:"scope"`
	// MaxDepth is the deepest level fetched: the seed is depth 0, and links
	// found on a page at MaxDepth are not followed. 0 means no limit.
	MaxDepth int `mapstructure:"max-depth"`
	// MaxPages bounds how many pages a crawl fetches; 0 means no limit.
	// The caller (the coordinator side) counts and enforces it.
	MaxPages int `mapstructure:"max-pages"`
	// Requisites adds a page's requisites (images, scripts, style sheets,
	// CSS url() references: see Document.Requisites) to its links, and
	// makes fetched style sheets (text/css) a source of links too. Off by
	// default: a crawl follows navigational links only.
	Requisites bool `mapstructure:"requisites"`
	// IgnoreRobots skips robots.txt (its rules and its Crawl-delay),
	// rel=nofollow links and <meta name=robots> / X-Robots-Tag nofollow,
	// as wget -e robots=off does. Only for sites you own or may crawl so.
	IgnoreRobots bool `mapstructure:"ignore-robots"`
	// Sitemaps makes the seed's page also read the sitemaps of the seed's
	// origin (the robots.txt Sitemap: lines and /sitemap.xml, sitemap
	// index files and gzip included) as a source of links.
	Sitemaps bool `mapstructure:"sitemaps"`
	// Resolve pins host:port pairs to other addresses when dialing, like
	// curl --resolve: {"demo.test:80": "127.0.0.1:8080"}. URLs, Host
	// headers, robots.txt and politeness still use the original name.
	// (Viper's default "." key delimiter splits such keys in a config
	// file; set it from flags or code.)
	Resolve map[string]string `mapstructure:"resolve"`
	// AllowPrivate lets a crawl whose seed is on a public address connect
	// to loopback, private, link-local (the cloud metadata address among
	// them), unique-local, unspecified and shared (CGNAT) addresses, which
	// the guard refuses otherwise (see guard.go). A crawl whose seed is on
	// such an address may reach them anyway.
	AllowPrivate bool `mapstructure:"allow-private"`
	// LookupIP, when set, resolves host names for the fetcher's
	// connections and the guard's seed check instead of the system
	// resolver: tests map public-looking names to loopback with it.
	LookupIP func(ctx context.Context, host string) ([]netip.Addr, error) `mapstructure:"-"`
}

// DefaultConfig returns the default settings for drover at the given
// version.
func DefaultConfig(version string) Config {
	return Config{
		Version:        version,
		ContactURL:     DefaultContactURL,
		ConnectTimeout: DefaultConnectTimeout,
		Timeout:        DefaultTimeout,
		MaxBodyBytes:   DefaultMaxBodyBytes,
		PerHost:        DefaultPerHost,
		MinDelay:       DefaultMinDelay,
		MaxCrawlDelay:  DefaultMaxCrawlDelay,
		RobotsTTL:      DefaultRobotsTTL,
		Scope:          ScopeHost,
		MaxDepth:       DefaultMaxDepth,
		Sitemaps:       true,
	}
}

// Agent returns the User-Agent header value: UserAgent, or the default
// built from Version and ContactURL.
func (c Config) Agent() string {
	if c.UserAgent != "" {
		return c.UserAgent
	}
	v := c.Version
	if v == "" {
		v = "dev"
	}
	if c.ContactURL == "" {
		return "drover/" + v
	}
	return "drover/" + v + " (+" + c.ContactURL + ")"
}

// productTokenRE is RFC 9309's product token: letters, "_" and "-".
var productTokenRE = regexp.MustCompile(`^[A-Za-z_-]+$`)

// ProductToken returns the agent's product token, the name it goes by in
// robots.txt: the User-Agent up to the first "/" or space ("drover").
func (c Config) ProductToken() string {
	a := c.Agent()
	if i := strings.IndexAny(a, "/ \t"); i >= 0 {
		a = a[:i]
	}
	return a
}

// Validate checks every field and returns an error wrapping
// ErrInvalidConfig that names the first wrong field and what was expected.
func (c Config) Validate() error {
	bad := func(field string, got any, want string) error {
		return fmt.Errorf("%w: %s is %v, want %s", ErrInvalidConfig, field, got, want)
	}
	if tok := c.ProductToken(); !productTokenRE.MatchString(tok) {
		return bad("UserAgent", fmt.Sprintf("%q", c.Agent()),
			"a product token of letters, '_' or '-' before the first '/' (RFC 9309), e.g. \"drover/1.0\"")
	}
	if strings.ContainsAny(c.Agent(), "\r\n") {
		return bad("UserAgent", fmt.Sprintf("%q", c.Agent()), "a single line")
	}
	switch {
	case c.ConnectTimeout <= 0:
		return bad("ConnectTimeout", c.ConnectTimeout, "a positive duration")
	case c.Timeout <= 0:
		return bad("Timeout", c.Timeout, "a positive duration")
	case c.MaxBodyBytes <= 0:
		return bad("MaxBodyBytes", c.MaxBodyBytes, "a positive byte count")
	case c.PerHost < 0:
		return bad("PerHost", c.PerHost, "0 (no limit) or more")
	case c.Parallel < 0:
		return bad("Parallel", c.Parallel, "0 (not known) or more")
	case c.MinDelay < 0:
		return bad("MinDelay", c.MinDelay, "zero or a positive duration")
	case c.MaxCrawlDelay < 0:
		return bad("MaxCrawlDelay", c.MaxCrawlDelay, "zero or a positive duration")
	case c.RobotsTTL <= 0:
		return bad("RobotsTTL", c.RobotsTTL, "a positive duration")
	case c.MaxDepth < 0:
		return bad("MaxDepth", c.MaxDepth, "0 (no limit) or more")
	case c.MaxPages < 0:
		return bad("MaxPages", c.MaxPages, "0 (no limit) or more")
	}
	if _, err := ParseScope(string(c.Scope)); err != nil {
		return fmt.Errorf("%w: Scope: %w", ErrInvalidConfig, err)
	}
	for from, to := range c.Resolve {
		if _, _, err := net.SplitHostPort(from); err != nil {
			return bad("Resolve key", fmt.Sprintf("%q", from), "host:port")
		}
		if _, _, err := net.SplitHostPort(to); err != nil {
			return bad(fmt.Sprintf("Resolve[%q]", from), fmt.Sprintf("%q", to), "host:port")
		}
	}
	return nil
}

// idlePerHost is how many idle connections to one host the fetcher
// keeps: as many as it may fetch from one host at once (PerHost, and at
// most Parallel), and at least 2 (net/http's default, when neither
// bounds them).
func (c Config) idlePerHost() int {
	n := c.PerHost
	if c.Parallel > 0 && (n == 0 || c.Parallel < n) {
		n = c.Parallel
	}
	return max(n, 2)
}

// Follow returns the links of a page at depth that a crawl seeded at seed
// should submit (at depth+1), normalised: none when the page is at
// MaxDepth, otherwise those the scope allows. The coordinator deduplicates
// them.
func (c Config) Follow(seed string, depth int, links []string) []string {
	if len(links) == 0 || c.MaxDepth > 0 && depth >= c.MaxDepth {
		return nil
	}
	ss, err := Normalize(seed)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(links))
	for _, l := range links {
		if cs, err := Normalize(l); err == nil && c.Scope.allows(ss, cs) {
			out = append(out, cs)
		}
	}
	return out
}
