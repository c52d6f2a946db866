package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/html/charset"
	"golang.org/x/sync/singleflight"
)

// Fetcher fetches pages politely. It is safe for concurrent use: a worker
// shares one Fetcher among its slots, so that the per-host limits and the
// robots.txt cache span all of them.
type Fetcher struct {
	cfg    Config
	agent  string
	token  string
	clock  Clock
	tr     *http.Transport // pages go straight to it: no redirect is followed
	robotc *http.Client    // follows up to 5, as RFC 9309 asks
	// gtr and grobotc are tr and robotc under the private-address guard
	// (guard.go): for crawls whose seed is on a public address.
	gtr     *http.Transport
	grobotc *http.Client
	guard   *guard
	header  http.Header // every page request's, shared and never changed

	mu            sync.Mutex
	hosts         map[string]*hostState   // by host[:port]
	robots        map[string]*robotsEntry // by scheme://host[:port]
	pruneHostsAt  int                     // prune hosts when the table reaches this size
	pruneRobotsAt int                     // prune robots when the table reaches this size
	flight        singleflight.Group      // one robots.txt fetch per origin at a time
	polite        politeness
	warc          *WARCWriter // nil: no archive
	warcHeader    http.Header // the page requests' header when archiving
}

// Option changes how New builds a Fetcher.
type Option func(*Fetcher)

// WithWARC makes the Fetcher record every page fetch it keeps (any
// answer but 429, 503 and other 5xx, which are retried) in w as a WARC
// request and response record pair. Page requests then ask for gzip
// themselves, so that a compressed body is archived as it came.
func WithWARC(w *WARCWriter) Option { return func(f *Fetcher) { f.warc = w } }

// WithClock makes the Fetcher use c instead of the system clock.
func WithClock(c Clock) Option { return func(f *Fetcher) { f.clock = c } }

// New validates cfg and returns a Fetcher for it.
func New(cfg Config, opts ...Option) (*Fetcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f := &Fetcher{
		cfg:           cfg,
		agent:         cfg.Agent(),
		token:         cfg.ProductToken(),
		clock:         SystemClock{},
		hosts:         make(map[string]*hostState),
		robots:        make(map[string]*robotsEntry),
		pruneHostsAt:  pruneFloor,
		pruneRobotsAt: pruneFloor,
	}
	for _, o := range opts {
		o(f)
	}
	f.header = http.Header{
		"User-Agent": {f.agent},
		"Accept":     {"text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"},
	}
	f.warcHeader = f.header.Clone()
	f.warcHeader.Set("Accept-Encoding", "gzip")
	resolve := make(map[string]string, len(cfg.Resolve))
	for k, v := range cfg.Resolve {
		resolve[k] = v
	}
	f.guard = newGuard(cfg)
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	// Two transports, so that a connection made for a crawl that may reach
	// private addresses is never reused by one that may not.
	newTransport := func(guarded bool) *http.Transport {
		return &http.Transport{
			Proxy: func(r *http.Request) (*url.URL, error) {
				if _, pinned := resolve[hostPort(r.URL)]; pinned {
					return nil, nil
				}
				return http.ProxyFromEnvironment(r)
			},
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				host, _, _ := net.SplitHostPort(addr)
				if to, ok := resolve[addr]; ok {
					addr = to
				}
				return f.guard.dial(ctx, dialer, guarded, network, host, addr)
			},
			ForceAttemptHTTP2:      true,
			TLSHandshakeTimeout:    cfg.ConnectTimeout,
			MaxIdleConns:           1024,
			MaxIdleConnsPerHost:    cfg.idlePerHost(),
			IdleConnTimeout:        90 * time.Second,
			MaxResponseHeaderBytes: 1 << 20,
		}
	}
	newRobotsClient := func(tr *http.Transport) *http.Client {
		return &http.Client{
			Transport: tr,
			CheckRedirect: func(_ *http.Request, via []*http.Request) error {
				if len(via) > 5 {
					return errTooManyRedirects
				}
				return nil
			},
		}
	}
	f.tr, f.gtr = newTransport(false), newTransport(true)
	f.robotc, f.grobotc = newRobotsClient(f.tr), newRobotsClient(f.gtr)
	return f, nil
}

// Close releases the Fetcher's idle connections.
func (f *Fetcher) Close() {
	f.tr.CloseIdleConnections()
	f.gtr.CloseIdleConnections()
}

// hostPort is u's host with the scheme's port made explicit, as a dialer
// sees it.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// Fetch fetches one URL and classifies the result (see Page and Outcome).
// It never panics and always returns a Page: problems are in Outcome and
// Err. It waits, honouring ctx, for robots.txt (fetched once per origin
// and cached), for a free fetch slot on the host and for the host's
// politeness delay; a URL robots.txt disallows is not fetched.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) Page {
	p := Page{URL: rawURL, FetchedAt: f.clock.Now()}
	norm, u, err := Parse(rawURL)
	if err != nil {
		p.Outcome, p.Err = External, err.Error()
		return p
	}
	p.FinalURL = norm
	ctx = f.withGuard(ctx, norm)

	rb := &Robots{}
	if !f.cfg.IgnoreRobots {
		var blocked *Page
		rb, p.Robots, blocked = f.robotsFor(ctx, u)
		if blocked != nil {
			blocked.URL, blocked.FinalURL, blocked.FetchedAt, blocked.Robots = p.URL, p.FinalURL, p.FetchedAt, p.Robots
			return *blocked
		}
		if !rb.Allowed(u.RequestURI()) {
			p.Outcome, p.Disallowed, p.Err = OK, true, ErrDisallowed
			return p
		}
	}

	h := f.hostFor(u.Host)
	defer f.hostDone(h)
	release, err := f.acquire(ctx, h, u, rb)
	if err != nil {
		p.Outcome, p.Err = Internal, fmt.Sprintf("waiting for a fetch slot on %s: %v", u.Host, err)
		return p
	}
	defer release()

	p.FetchedAt = f.clock.Now()
	f.get(ctx, norm, u, &p)
	p.FetchDuration = f.clock.Now().Sub(p.FetchedAt)
	return p
}

// get performs the request for p and fills in the answer.
func (f *Fetcher) get(ctx context.Context, norm string, u *url.URL, p *Page) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, norm, nil)
	if err != nil {
		p.Outcome, p.Err = External, fmt.Sprintf("building request for %s: %v", norm, err)
		return
	}
	req.Header = f.header // a RoundTripper does not change a request
	var rec *warcFetch
	if f.warc != nil {
		if rec, err = f.warcBegin(req, norm, p); err != nil {
			p.Outcome, p.Err = Internal, err.Error()
			return
		}
		defer rec.discard()
		req = rec.traced(req)
	}
	// The transport itself rather than an http.Client: a page's redirect
	// is a new key for the coordinator, not followed here, and the
	// client's redirect machinery (a copy of the headers per request)
	// would cost every page for nothing. Errors read as the client's.
	resp, err := f.transport(ctx).RoundTrip(req)
	if err != nil {
		if refusedPage(err, p) {
			return
		}
		err = &url.Error{Op: "Get", URL: u.Redacted(), Err: err}
		p.Outcome, p.Err = Internal, describeFetchError(ctx, err, f.cfg.Timeout)
		return
	}
	defer resp.Body.Close()
	p.Status = resp.StatusCode
	p.ContentType = resp.Header.Get("Content-Type")

	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		p.Outcome = Throttled
		p.RetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), f.clock.Now())
		p.Err = fmt.Sprintf("throttled: %s", resp.Status)
		drain(resp.Body)
		return
	case code >= 500:
		p.Outcome, p.Err = Internal, fmt.Sprintf("server error: %s", resp.Status)
		drain(resp.Body)
		return
	}
	p.Outcome = OK
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		if loc := resp.Header.Get("Location"); loc != "" {
			if t, err := u.Parse(cleanHref(loc)); err == nil {
				if s, err := Normalize(t.String()); err == nil {
					p.FinalURL = s
					p.Links = []string{s}
				}
			}
		}
	}

	var raw io.Reader = resp.Body
	if rec != nil {
		if err := rec.head(resp); err != nil {
			p.Outcome, p.Err, p.Links = Internal, fmt.Sprintf("recording the response: %v", err), nil
			return
		}
		raw = io.TeeReader(resp.Body, rec) // the body is read once, into the record as it goes
	}
	body := &countingReader{r: io.LimitReader(raw, f.cfg.MaxBodyBytes)}
	parsed := false
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		parsed, err = f.parse(u, resp, contentReader(body, resp, rec != nil), p)
		if err != nil {
			p.Outcome, p.Err, p.Links, p.Bytes = Internal, describeFetchError(ctx, err, f.cfg.Timeout), nil, body.n
			return
		}
	}
	if !parsed && rec == nil {
		// Nothing needs this body (not a page or style sheet we parse):
		// a little is read so that the connection may be reused, and past
		// that the declared length is recorded.
		n, err := io.Copy(io.Discard, io.LimitReader(body, drainBytes))
		p.Bytes = n
		if err == nil && n == drainBytes && resp.ContentLength > n {
			p.Bytes = resp.ContentLength
		}
		return
	}
	if _, err := io.Copy(io.Discard, body); err != nil {
		p.Outcome, p.Err, p.Links, p.Bytes = Internal, "reading body: "+describeFetchError(ctx, err, f.cfg.Timeout), nil, body.n
		return
	}
	p.Bytes = body.n
	if body.n == f.cfg.MaxBodyBytes {
		var one [1]byte
		if n, _ := io.ReadFull(resp.Body, one[:]); n > 0 {
			p.Truncated = true
		}
	}
	if rec != nil {
		if loc, err := rec.finish(p.Truncated); err != nil {
			p.Outcome, p.Err, p.Links = Internal, err.Error(), nil
		} else {
			p.WARC = loc
		}
	}
}

// parse reads the links of a 2xx answer's body into p: an HTML page's
// (see Document; rel=nofollow links and all links of a nofollow page
// dropped unless Config.IgnoreRobots, requisites kept only with
// Config.Requisites) or, with Config.Requisites, a style sheet's. Other
// bodies are not read here.
func (f *Fetcher) parse(u *url.URL, resp *http.Response, body io.Reader, p *Page) (parsed bool, err error) {
	isHTML, utf8 := mediaType(p.ContentType)
	if !isHTML {
		if f.cfg.Requisites && isCSS(p.ContentType) {
			p.Links, err = ExtractCSSLinks(u, body)
			return true, err
		}
		return false, nil
	}
	var r io.Reader = body
	if !utf8 { // sniff <meta charset> and convert to UTF-8
		if cr, err := charset.NewReader(body, p.ContentType); err == nil {
			r = cr
		}
	}
	doc, err := ExtractLinks(u, r)
	if err != nil {
		return true, err
	}
	tagNoIndex, tagNoFollow := xRobotsTag(resp.Header, f.token)
	p.Title, p.Canonical = doc.Title, doc.Canonical
	p.NoIndex = doc.MetaNoIndex || tagNoIndex
	p.NoFollow = doc.MetaNoFollow || tagNoFollow
	switch {
	case f.cfg.IgnoreRobots:
		p.Links = append(doc.Links, doc.NoFollow...)
	case !p.NoFollow:
		p.Links = doc.Links
	}
	if f.cfg.Requisites {
		p.Links = append(p.Links, doc.Requisites...)
	}
	if len(p.Links) > len(doc.Links) {
		p.Links = resolveLinks(u, nil, p.Links) // deduplicated again across the lists
	}
	return true, nil
}

// xRobotsTag reads the X-Robots-Tag headers that apply to the agent
// whose product token is token: those without an agent name or naming it.
func xRobotsTag(h http.Header, token string) (noindex, nofollow bool) {
	for _, v := range h.Values("X-Robots-Tag") {
		if name, rest, ok := strings.Cut(v, ":"); ok && !strings.ContainsAny(name, ", ") {
			if !strings.EqualFold(strings.TrimSpace(name), token) {
				continue
			}
			v = rest
		}
		for _, d := range strings.FieldsFunc(strings.ToLower(v), isListSep) {
			noindex = noindex || d == "noindex" || d == "none"
			nofollow = nofollow || d == "nofollow" || d == "none"
		}
	}
	return noindex, nofollow
}

// isCSS reports whether a Content-Type names text/css.
func isCSS(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/css")
}

// refusedPage fills in p for a fetch the private-address guard refused
// (guard.go): not fetched, Outcome OK (retrying cannot help), Refused set
// and Err saying why. It reports whether err was such a refusal.
func refusedPage(err error, p *Page) bool {
	var re *RefusedError
	if !errors.As(err, &re) {
		return false
	}
	p.Outcome, p.Refused, p.Err = OK, true, re.Error()
	return true
}

// mediaType reports whether a Content-Type names text/html, and whether it
// says charset=utf-8 (then the body needs no sniffing or conversion: the
// HTML tokenizer reads UTF-8). The usual spellings are recognised without
// parsing (mime.ParseMediaType builds a map for every call); anything else
// is parsed.
func mediaType(contentType string) (html, utf8 bool) {
	switch {
	case strings.EqualFold(contentType, "text/html; charset=utf-8"),
		strings.EqualFold(contentType, "text/html;charset=utf-8"):
		return true, true
	case strings.EqualFold(contentType, "text/html"):
		return true, false
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false, false
	}
	cs := strings.ToLower(params["charset"])
	return mt == "text/html", cs == "utf-8" || cs == "utf8"
}

// drainBytes is how much of a body nobody needs is read anyway, so that
// the connection can be reused after small bodies.
const drainBytes = 64 << 10

// drain reads a little of a body we do not want, so that the connection
// can be reused for small error pages.
func drain(r io.Reader) { _, _ = io.CopyN(io.Discard, r, 4<<10) }

// describeFetchError says what kind of failure err is, for Page.Err. A
// connection closed because ctx ended is reported as that ending (timeout
// or cancellation), not as the closed connection.
func describeFetchError(ctx context.Context, err error, timeout time.Duration) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()):
		return fmt.Sprintf("timeout (limit %s): %v", timeout, err)
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return fmt.Sprintf("canceled: %v", err)
	}
	return err.Error()
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

// Read reads from the underlying reader and counts what it got.
func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}
