// Package demosite is drover's built-in demo web site: a deterministic
// http.Handler of a few hundred pages with the traps a crawler meets in the
// wild, and Expected, computed from the site's own link graph, saying what
// a correct crawl of it finds. `drover demo` serves it on 127.0.0.1 and
// crawls it; tests crawl it and compare.
//
// What it holds (paths from the site root):
//
//   - "/" links three sections (/docs/, /blog/, /shop/) of 8 chapters of 10
//     pages each, linked in cycles (pages link their siblings, parents,
//     other chapters, other sections and home), every page reached under
//     several spellings: relative and "./"/"../" paths, "#fragments",
//     an upper-case scheme and host, and the explicit default port ":80"
//     (when the site is served on the default port; see Options). The blog
//     pages carry a <base href>.
//   - /robots.txt disallows /private/ (but allows /private/open.html) and
//     "/*.pdf$", and has a slowbot group with a long Crawl-delay that drover
//     must not apply to itself.
//   - /status/ links the awkward pages: busy.html answers 429 with a
//     Retry-After for its first Options.ThrottleFirst requests and
//     unavailable.html 503 likewise; flaky.html answers 500 for its first
//     Options.FlapFailures requests; broken.html always 500 (it ends failed
//     under any retry budget); slow.html answers after Options.SlowDelay;
//     missing.html is a 404; data.txt is text/plain whose markup must not
//     be parsed.
//   - /old-docs redirects (301) to /docs/ and /moved (302) to a page found
//     only through that redirect.
//   - /calendar/2026/11 is an infinite calendar: each month links the next
//     and the previous, forever, until a depth limit stops the crawl.
//   - "/" links an off-site URL (Options.OffSite) that no scope allows.
//
// The link graph, calendar included, is a tree whose extra links only go
// to ancestors, children of ancestors or the page itself, so a crawl
// that submits each page's links in one batch finds every page first from
// its parent, at the same depth, in whatever order its workers run: the
// expected set is exact under a depth limit even for a concurrent crawl.
package demosite

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options tunes the site's awkward pages. The zero value gives the
// defaults.
type Options struct {
	// ThrottleFirst is how many requests busy.html (429) and
	// unavailable.html (503) refuse before answering. Default 2.
	ThrottleFirst int
	// RetryAfter is the Retry-After they send, in whole seconds. Default 1s.
	RetryAfter time.Duration
	// FlapFailures is how many requests flaky.html answers 500 before it
	// works. Default 2: a crawl needs a retry budget of at least 3
	// attempts (Expected.MinAttempts) to fetch it.
	FlapFailures int
	// SlowDelay is how long slow.html takes. Default 300ms.
	SlowDelay time.Duration
	// OffSite is the off-site URL "/" links to. Default
	// "http://offsite.invalid/" (a name that never resolves).
	OffSite string
}

func (o Options) withDefaults() Options {
	if o.ThrottleFirst <= 0 {
		o.ThrottleFirst = 2
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = time.Second
	}
	if o.FlapFailures <= 0 {
		o.FlapFailures = 2
	}
	if o.SlowDelay <= 0 {
		o.SlowDelay = 300 * time.Millisecond
	}
	if o.OffSite == "" {
		o.OffSite = "http://offsite.invalid/"
	}
	return o
}

// Robots is the site's robots.txt.
const Robots = `# drover demo site
User-agent: slowbot
Crawl-delay: 30
Disallow: /

User-agent: drover
User-agent: *
Disallow: /private/
Allow: /private/open.html
Disallow: /*.pdf$
`

// pdfBody is what the PDF page serves.
const pdfBody = "%PDF-1.4\n% drover demo report\n%%EOF\n"

// Hit is one request the site answered.
type Hit struct {
	Target string    // path and query
	Status int       // the status it answered
	At     time.Time // when the request arrived (before any answer was sent)
}

// Site is the demo site. It is safe for concurrent use. Its throttled and
// flapping pages count requests for the life of the Site: a second crawl
// of the same Site sees them succeed at once.
type Site struct {
	opts  Options
	pages map[string]*page
	order []string

	mu   sync.Mutex
	seen map[string]int // requests per target
	hits []Hit
}

// New builds the site.
func New(opts Options) *Site {
	opts = opts.withDefaults()
	pages, order := buildGraph(opts.OffSite)
	return &Site{opts: opts, pages: pages, order: order, seen: map[string]int{}}
}

// Options returns the options in force, defaults filled in.
func (s *Site) Options() Options { return s.opts }

// Hits returns every request answered so far, in the order the answers
// were sent.
func (s *Site) Hits() []Hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Hit(nil), s.hits...)
}

// Requests returns how many requests a target (path and query) received.
func (s *Site) Requests(target string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[target]
}

// lookup finds the page for a request target: by path and query, then
// by path alone, then among the calendar pages.
func (s *Site) lookup(target, path string) (*page, bool) {
	if p, ok := s.pages[target]; ok {
		return p, true
	}
	if p, ok := s.pages[path]; ok {
		return p, true
	}
	return calendarPage(path)
}

// ServeHTTP answers one request.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	target := r.URL.RequestURI()
	s.mu.Lock()
	s.seen[target]++
	n := s.seen[target]
	s.mu.Unlock()
	status := s.serve(w, r, target, n)
	s.mu.Lock()
	s.hits = append(s.hits, Hit{Target: target, Status: status, At: at})
	s.mu.Unlock()
}

// serve writes the answer to the n-th request for target and returns its
// status.
func (s *Site) serve(w http.ResponseWriter, r *http.Request, target string, n int) int {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return http.StatusMethodNotAllowed
	}
	if r.URL.Path == "/robots.txt" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, Robots)
		return http.StatusOK
	}
	p, ok := s.lookup(target, r.URL.Path)
	if !ok || p.kind == kindMissing {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `<!doctype html><title>Not found</title><p>No such page. <a href="/">Home</a>`)
		return http.StatusNotFound
	}
	retryAfter := strconv.Itoa(max(1, int((s.opts.RetryAfter+time.Second-1)/time.Second)))
	switch p.kind {
	case kindThrottle, kindUnavail:
		if n <= s.opts.ThrottleFirst {
			code := http.StatusTooManyRequests
			if p.kind == kindUnavail {
				code = http.StatusServiceUnavailable
			}
			w.Header().Set("Retry-After", retryAfter)
			http.Error(w, http.StatusText(code), code)
			return code
		}
	case kindFlap:
		if n <= s.opts.FlapFailures {
			http.Error(w, "flapping: try again", http.StatusInternalServerError)
			return http.StatusInternalServerError
		}
	case kindBroken:
		http.Error(w, "always broken", http.StatusInternalServerError)
		return http.StatusInternalServerError
	case kindSlow:
		t := time.NewTimer(s.opts.SlowDelay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return 499 // the client went away; nothing is written
		}
	case kindRedirect:
		w.Header().Set("Location", originOf(r).href(p, p.links[0]))
		w.WriteHeader(p.status)
		return p.status
	case kindText:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, p.body)
		return http.StatusOK
	case kindPDF:
		w.Header().Set("Content-Type", "application/pdf")
		io.WriteString(w, pdfBody)
		return http.StatusOK
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, render(originOf(r), p))
	return http.StatusOK
}

// originOf is the scheme and host a request was addressed to.
func originOf(r *http.Request) origin {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return origin{scheme: scheme, host: strings.ToLower(r.Host)}
}

// render writes a page's HTML.
func render(o origin, p *page) string {
	var b strings.Builder
	title := html.EscapeString(p.title)
	b.WriteString("<!doctype html>\n<html><head><meta charset=\"utf-8\">\n<title>" + title + "</title>\n")
	if p.base != "" {
		b.WriteString(`<base href="` + html.EscapeString(p.base) + "\">\n")
	}
	for _, l := range p.links {
		if l.tag == "link" {
			fmt.Fprintf(&b, "<link rel=\"alternate\" href=\"%s\">\n", html.EscapeString(o.href(p, l)))
		}
	}
	b.WriteString("</head><body>\n<h1>" + title + "</h1>\n<ul>\n")
	for i, l := range p.links {
		switch l.tag {
		case "link":
		case "area":
			fmt.Fprintf(&b, "<li><map name=\"m%d\"><area shape=\"rect\" coords=\"0,0,9,9\" href=\"%s\" alt=\"%s\"></map></li>\n",
				i, html.EscapeString(o.href(p, l)), html.EscapeString(l.target))
		default:
			fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a></li>\n", html.EscapeString(o.href(p, l)), html.EscapeString(l.target))
		}
	}
	b.WriteString("</ul>\n</body></html>\n")
	return b.String()
}
