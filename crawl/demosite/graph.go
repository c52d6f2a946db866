package demosite

import (
	"fmt"
	"strconv"
	"strings"
)

// kind is how a page answers.
type kind int

const (
	kindHTML       kind = iota // 200 text/html with links
	kindMissing                // 404: linked, never served
	kindThrottle               // 429 with Retry-After for its first requests, then HTML
	kindUnavail                // 503 with Retry-After for its first requests, then HTML
	kindFlap                   // 500 for its first requests, then HTML
	kindBroken                 // 500 always
	kindSlow                   // HTML after a delay
	kindRedirect               // 301 or 302 to its only link
	kindText                   // 200 text/plain (holds markup that must not be parsed)
	kindPDF                    // 200 application/pdf
	kindDisallowed             // robots.txt disallows it (served as HTML if asked)
)

// spelling is how a link's href is written; every spelling of a target
// resolves to the same normalised URL.
type spelling int

const (
	spellPlain    spelling = iota // "/docs/ch-1/"
	spellRelative                 // "../ch-1/" from the page's (or base's) directory
	spellDot                      // "/docs/./zz/../ch-1/"
	spellFragment                 // "/docs/ch-1/#part-2"
	spellUpper                    // "HTTP://HOST:PORT/docs/ch-1/"
	spellPort                     // "http://host:80/docs/ch-1/" (explicit default port when the origin has none)
	spellCount
)

// link is one outbound link of a page.
type link struct {
	target string // a path on the site ("/docs/"), or an absolute off-site URL
	spell  spelling
	tag    string // "a" (default), "link" or "area"
}

// page is one node of the site's link graph. The graph is a tree whose
// extra links go only to ancestors, to children of ancestors, or to the
// page itself: every page is so first discovered from its parent,
// whatever order a concurrent crawl fetches pages in, and its depth is its
// depth in the tree.
type page struct {
	path   string // the target: path, with a query for a few pages
	title  string
	kind   kind
	status int    // for kindRedirect: 301 or 302
	base   string // <base href>, when the page has one
	links  []link
	body   string // for kindText
}

// Site structure sizes.
var sections = []string{"docs", "blog", "shop"}

const (
	chapters = 8  // per section
	leaves   = 10 // per chapter
)

// Calendar trap: /calendar/YYYY/M, entered at calendarStart.
const (
	calendarPrefix = "/calendar/"
	calendarYear   = 2026
	calendarMonth  = 11
)

// buildGraph returns the site's fixed pages by target, and their targets in
// a fixed order.
func buildGraph(offsite string) (map[string]*page, []string) {
	g := map[string]*page{}
	var order []string
	add := func(p *page) *page {
		g[p.path] = p
		order = append(order, p.path)
		return p
	}
	home := add(&page{path: "/", title: "drover demo site"})
	home.links = []link{
		{target: "/", spell: spellUpper, tag: "link"},
		{target: "/", spell: spellFragment},
		{target: "/about.html", spell: spellRelative},
	}
	for i, s := range sections {
		home.links = append(home.links, link{target: "/" + s + "/", spell: spelling(i) % spellCount})
	}
	home.links = append(home.links,
		link{target: "/status/", spell: spellDot},
		link{target: calendarPath(calendarYear, calendarMonth), spell: spellPlain},
		link{target: "/private/", spell: spellPlain},
		link{target: "/private/secret.html", spell: spellRelative},
		link{target: "/private/open.html", spell: spellPort},
		link{target: "/old-docs", spell: spellPlain},
		link{target: "/moved", spell: spellPlain, tag: "area"},
		link{target: offsite, spell: spellPlain},
		link{target: "mailto:webmaster@demo.invalid", spell: spellPlain},
		link{target: "javascript:void(0)", spell: spellPlain},
	)

	about := add(&page{path: "/about.html", title: "About the demo"})
	about.links = []link{
		{target: "/", spell: spellPort},
		{target: "/files/report.pdf", spell: spellRelative},
		{target: "/files/report.pdf?download=1", spell: spellPlain},
		{target: "/docs/", spell: spellUpper},
	}
	add(&page{path: "/files/report.pdf", title: "", kind: kindDisallowed})
	add(&page{path: "/files/report.pdf?download=1", kind: kindPDF})

	for si, s := range sections {
		sec := add(&page{path: "/" + s + "/", title: titleCase(s)})
		sec.links = append(sec.links, link{target: "/", spell: spellRelative})
		for c := 1; c <= chapters; c++ {
			sec.links = append(sec.links, link{target: chapterPath(s, c), spell: spelling(c+si) % spellCount})
		}
		sec.links = append(sec.links, link{target: "/" + sections[(si+1)%len(sections)] + "/", spell: spellRelative})
		for c := 1; c <= chapters; c++ {
			ch := add(&page{path: chapterPath(s, c), title: fmt.Sprintf("%s · Chapter %d", titleCase(s), c)})
			ch.links = []link{
				{target: "/" + s + "/", spell: spellRelative},
				{target: "/", spell: spellUpper, tag: "link"},
			}
			for l := 1; l <= leaves; l++ {
				ch.links = append(ch.links, link{target: leafPath(s, c, l), spell: spelling(l+c) % spellCount})
			}
			ch.links = append(ch.links, link{target: chapterPath(s, c%chapters+1), spell: spellRelative})
			for l := 1; l <= leaves; l++ {
				lf := add(&page{path: leafPath(s, c, l), title: fmt.Sprintf("%s · Chapter %d · Page %d", titleCase(s), c, l)})
				if s == "blog" { // relative links in blog pages resolve against <base href>
					lf.base = "/" + s + "/"
				}
				lf.links = []link{
					{target: lf.path, spell: spellFragment},
					{target: chapterPath(s, c), spell: spellRelative},
					{target: leafPath(s, c, l%leaves+1), spell: spelling(l) % spellCount},
					{target: leafPath(s, c, (l+leaves-2)%leaves+1), spell: spelling(l+3) % spellCount},
					{target: chapterPath(s, (c+l)%chapters+1), spell: spellRelative},
					{target: "/" + sections[(si+l)%len(sections)] + "/", spell: spelling(c) % spellCount},
					{target: "/", spell: spelling(l+c) % spellCount},
				}
			}
		}
	}

	status := add(&page{path: "/status/", title: "Status pages"})
	status.links = []link{{target: "/", spell: spellRelative}}
	special := func(name, title string, k kind, child bool) {
		p := add(&page{path: "/status/" + name, title: title, kind: k})
		status.links = append(status.links, link{target: p.path, spell: spellRelative})
		if child {
			c := add(&page{path: strings.TrimSuffix(p.path, ".html") + "-child.html", title: title + " · child"})
			p.links = []link{{target: c.path, spell: spellRelative}, {target: "/status/", spell: spellRelative}}
			c.links = []link{{target: p.path, spell: spellRelative}, {target: "/", spell: spellPlain}}
		}
	}
	special("busy.html", "Busy (429 first)", kindThrottle, true)
	special("unavailable.html", "Unavailable (503 first)", kindUnavail, true)
	special("flaky.html", "Flaky (500 first)", kindFlap, true)
	special("broken.html", "Broken (always 500)", kindBroken, false)
	special("slow.html", "Slow", kindSlow, true)
	special("missing.html", "", kindMissing, false)
	special("data.txt", "", kindText, false)
	g["/status/data.txt"].body = "This is text/plain; its markup is not HTML: <a href=\"/status/hidden.html\">hidden</a>\n"

	add(&page{path: "/private/", kind: kindDisallowed})
	add(&page{path: "/private/secret.html", kind: kindDisallowed})
	open := add(&page{path: "/private/open.html", title: "Open despite /private/"})
	open.links = []link{{target: "/", spell: spellRelative}}

	add(&page{path: "/old-docs", kind: kindRedirect, status: 301, links: []link{{target: "/docs/", spell: spellPlain}}})
	add(&page{path: "/moved", kind: kindRedirect, status: 302, links: []link{{target: "/landing.html", spell: spellUpper}}})
	landing := add(&page{path: "/landing.html", title: "Landing (reached by a redirect)"})
	landing.links = []link{{target: "/", spell: spellPlain}, {target: "/moved", spell: spellRelative}}

	// Served but linked only from non-HTML or disallowed pages: a crawl
	// must never find them.
	add(&page{path: "/status/hidden.html", title: "Hidden"})
	secretChild := add(&page{path: "/private/inner.html", title: "Inner"})
	g["/private/"].links = []link{{target: secretChild.path, spell: spellRelative}}
	return g, order
}

// unreachable are the served pages a crawl from "/" must not find.
var unreachable = []string{"/status/hidden.html", "/private/inner.html"}

func chapterPath(section string, c int) string { return fmt.Sprintf("/%s/ch-%d/", section, c) }

func leafPath(section string, c, l int) string {
	return fmt.Sprintf("/%s/ch-%d/page-%d.html", section, c, l)
}

func calendarPath(year, month int) string { return fmt.Sprintf("%s%d/%d", calendarPrefix, year, month) }

// calendarPage builds the calendar page for a path, if it is one:
// /calendar/YYYY/M for years 1-9999. The entry month links both ways;
// later months link forward (their child) and back (their parent), and
// earlier months the other way round, so the trap is a tree too.
func calendarPage(path string) (*page, bool) {
	rest, ok := strings.CutPrefix(path, calendarPrefix)
	if !ok {
		return nil, false
	}
	ys, ms, ok := strings.Cut(rest, "/")
	if !ok {
		return nil, false
	}
	y, err1 := strconv.Atoi(ys)
	m, err2 := strconv.Atoi(ms)
	if err1 != nil || err2 != nil || y < 1 || y > 9999 || m < 1 || m > 12 || calendarPath(y, m) != path {
		return nil, false
	}
	prevY, prevM := y, m-1
	if prevM == 0 {
		prevY, prevM = y-1, 12
	}
	nextY, nextM := y, m+1
	if nextM == 13 {
		nextY, nextM = y+1, 1
	}
	p := &page{path: path, title: fmt.Sprintf("Calendar %d-%02d", y, m)}
	p.links = []link{
		{target: "/", spell: spellPlain},
		{target: calendarPath(prevY, prevM), spell: spellRelative},
		{target: calendarPath(nextY, nextM), spell: spellRelative},
	}
	if (y == 1 && m == 1) || (y == 9999 && m == 12) { // the ends of time
		p.links = p.links[:1]
	}
	return p, true
}

func titleCase(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// origin is where the site is served, as the request saw it.
type origin struct {
	scheme, host string // host as in the Host header, with any port
}

// href writes a link's target from page p in the link's spelling.
func (o origin) href(p *page, l link) string {
	t := l.target
	if !strings.HasPrefix(t, "/") { // off-site or another scheme: as is
		return t
	}
	switch l.spell {
	case spellRelative:
		dir := p.path
		if p.base != "" {
			dir = p.base
		}
		return relative(dir, t)
	case spellDot:
		i := strings.LastIndexByte(t, '/')
		return t[:i+1] + "./zz/../" + t[i+1:]
	case spellFragment:
		return t + "#part-2"
	case spellUpper:
		return strings.ToUpper(o.scheme) + "://" + strings.ToUpper(o.host) + t
	case spellPort:
		host := o.host
		if !strings.Contains(host, ":") || strings.HasSuffix(host, "]") {
			if o.scheme == "https" {
				host += ":443"
			} else {
				host += ":80"
			}
		}
		return o.scheme + "://" + host + t
	}
	return t
}

// relative writes target relative to the directory of from: "../x/y".
func relative(from, target string) string {
	fromDir := strings.Split(from[:strings.LastIndexByte(from, '/')+1], "/") // "", "a", "b", ""
	fromDir = fromDir[1 : len(fromDir)-1]
	tq := ""
	if i := strings.IndexByte(target, '?'); i >= 0 {
		target, tq = target[:i], target[i:]
	}
	parts := strings.Split(target, "/")[1:] // "a", "x", "file"
	tDir, file := parts[:len(parts)-1], parts[len(parts)-1]
	common := 0
	for common < len(fromDir) && common < len(tDir) && fromDir[common] == tDir[common] {
		common++
	}
	var b strings.Builder
	for range len(fromDir) - common {
		b.WriteString("../")
	}
	for _, d := range tDir[common:] {
		b.WriteString(d + "/")
	}
	b.WriteString(file)
	if b.Len() == 0 {
		b.WriteString("./")
	}
	return b.String() + tq
}
