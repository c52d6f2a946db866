package crawl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Document is what ExtractLinks finds in an HTML page. Every URL in it is
// resolved against the page URL or its <base href>, normalised (see
// Normalize, so without fragments), http(s) only, and each list holds a
// URL once, in document order.
type Document struct {
	// Title is the text of the first <title>, whitespace collapsed.
	Title string
	// Links are the navigational links a crawler follows: a[href],
	// area[href], link[href] with a navigational rel (anything but the
	// requisite rels below, dns-prefetch and preconnect), iframe[src],
	// frame[src] and <meta http-equiv=refresh content="N; url=...">.
	// Those marked rel=nofollow are in NoFollow instead.
	Links []string
	// NoFollow are the a, area and link targets marked rel=nofollow that
	// no other element links to without it.
	NoFollow []string
	// Requisites are what the page needs to render: img[src], srcset
	// candidates (img, source), script[src], link rel=stylesheet, icon,
	// preload, modulepreload and manifest, video/audio/source/track/embed
	// sources, object[data], input[type=image][src], background
	// attributes, and CSS url() and @import in <style> elements and style
	// attributes.
	Requisites []string
	// Canonical is the first <link rel=canonical> target ("" if none).
	Canonical string
	// MetaNoFollow and MetaNoIndex are set by <meta name=robots> with
	// content nofollow, noindex or none.
	MetaNoFollow, MetaNoIndex bool
}

// requisiteRels are the link rel values that name resources a page needs
// rather than pages to crawl.
var requisiteRels = []string{"stylesheet", "icon", "apple-touch-icon", "apple-touch-icon-precomposed",
	"mask-icon", "preload", "modulepreload", "prefetch", "manifest"}

// ExtractLinks reads an HTML document fetched from pageURL (which must be
// absolute) and returns its title, links, requisites and robots hints
// (see Document). It streams the document with the golang.org/x/net/html
// tokenizer, so malformed HTML is read the way a browser would tokenise it
// and never fails; the error is the reader's. References that do not parse
// or are not http(s) (mailto:, javascript:, data:, tel:, ...) are skipped.
// The first <base href> applies to every reference of the document,
// including those before it.
func ExtractLinks(pageURL *url.URL, r io.Reader) (Document, error) {
	var doc Document
	var links, nofollow, reqs []string
	var canonical string
	var base *url.URL
	inTitle, haveTitle, inStyle := false, false, false
	var title strings.Builder
	var attrs []attrKV
	z := html.NewTokenizer(r)
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			err := z.Err()
			if errors.Is(err, io.EOF) {
				err = nil
			}
			doc.Title = collapseSpace(title.String())
			doc.Links = resolveLinks(pageURL, base, links)
			doc.NoFollow = resolveLinks(pageURL, base, nofollow)
			doc.NoFollow = slices.DeleteFunc(doc.NoFollow, func(s string) bool { return slices.Contains(doc.Links, s) })
			doc.Requisites = resolveLinks(pageURL, base, reqs)
			if canonical != "" {
				if c := resolveLinks(pageURL, base, []string{canonical}); len(c) == 1 {
					doc.Canonical = c[0]
				}
			}
			if err != nil {
				return doc, fmt.Errorf("reading html of %s: %w", pageURL, err)
			}
			return doc, nil
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			attrs = readAttrs(z, hasAttr, attrs[:0])
			if style, ok := get(attrs, "style"); ok {
				reqs = appendCSSURLs(reqs, style)
			}
			switch a {
			case atom.A, atom.Area:
				if href, ok := get(attrs, "href"); ok {
					if hasToken(attrs, "rel", "nofollow") {
						nofollow = append(nofollow, href)
					} else {
						links = append(links, href)
					}
				}
			case atom.Link:
				href, ok := get(attrs, "href")
				if !ok {
					break
				}
				rel, _ := get(attrs, "rel")
				switch rels := strings.Fields(strings.ToLower(rel)); {
				case slices.ContainsFunc(rels, func(r string) bool { return slices.Contains(requisiteRels, r) }):
					reqs = append(reqs, href)
				case slices.Contains(rels, "dns-prefetch") || slices.Contains(rels, "preconnect"):
				case slices.Contains(rels, "nofollow"):
					nofollow = append(nofollow, href)
				default:
					if slices.Contains(rels, "canonical") && canonical == "" {
						canonical = href
					}
					links = append(links, href)
				}
			case atom.Iframe, atom.Frame:
				if src, ok := get(attrs, "src"); ok {
					links = append(links, src)
				}
			case atom.Meta:
				content, _ := get(attrs, "content")
				if eq, _ := get(attrs, "http-equiv"); strings.EqualFold(strings.TrimSpace(eq), "refresh") {
					if u, ok := refreshURL(content); ok {
						links = append(links, u)
					}
				}
				if n, _ := get(attrs, "name"); strings.EqualFold(strings.TrimSpace(n), "robots") {
					for _, d := range strings.FieldsFunc(strings.ToLower(content), isListSep) {
						doc.MetaNoFollow = doc.MetaNoFollow || d == "nofollow" || d == "none"
						doc.MetaNoIndex = doc.MetaNoIndex || d == "noindex" || d == "none"
					}
				}
			case atom.Base:
				if href, ok := get(attrs, "href"); ok && base == nil {
					if b, err := pageURL.Parse(cleanHref(href)); err == nil {
						base = b
					}
				}
			case atom.Title:
				inTitle = !haveTitle && tt == html.StartTagToken
			case atom.Style:
				inStyle = tt == html.StartTagToken
			case atom.Img, atom.Source:
				reqs = appendAttr(reqs, attrs, "src")
				if set, ok := get(attrs, "srcset"); ok {
					reqs = appendSrcset(reqs, set)
				}
			case atom.Script, atom.Embed, atom.Audio, atom.Track:
				reqs = appendAttr(reqs, attrs, "src")
			case atom.Video:
				reqs = appendAttr(reqs, attrs, "src")
				reqs = appendAttr(reqs, attrs, "poster")
			case atom.Input:
				if t, _ := get(attrs, "type"); strings.EqualFold(t, "image") {
					reqs = appendAttr(reqs, attrs, "src")
				}
			case atom.Object:
				reqs = appendAttr(reqs, attrs, "data")
			case atom.Body, atom.Table, atom.Td, atom.Th:
				reqs = appendAttr(reqs, attrs, "background")
			}
		case html.EndTagToken:
			switch name, _ := z.TagName(); atom.Lookup(name) {
			case atom.Title:
				if inTitle {
					inTitle, haveTitle = false, true
				}
			case atom.Style:
				inStyle = false
			}
		case html.TextToken:
			switch {
			case inTitle:
				title.Write(z.Text())
			case inStyle:
				reqs = appendCSSURLs(reqs, string(z.Text()))
			}
		}
	}
}

// attrKV is one attribute of the current tag; the slices are the
// tokenizer's, valid until its next token.
type attrKV struct{ k, v []byte }

// readAttrs appends the current tag's attributes to dst.
func readAttrs(z *html.Tokenizer, more bool, dst []attrKV) []attrKV {
	for more {
		var k, v []byte
		k, v, more = z.TagAttr()
		dst = append(dst, attrKV{k, v})
	}
	return dst
}

// get returns the value of the first attribute named key.
func get(attrs []attrKV, key string) (string, bool) {
	for _, a := range attrs {
		if string(a.k) == key {
			return string(a.v), true
		}
	}
	return "", false
}

// hasToken reports whether attribute key is a space-separated list holding
// token (ASCII case-insensitively), as rel="nofollow noopener".
func hasToken(attrs []attrKV, key, token string) bool {
	for _, a := range attrs {
		if string(a.k) == key {
			for _, f := range bytes.Fields(a.v) {
				if strings.EqualFold(string(f), token) {
					return true
				}
			}
		}
	}
	return false
}

// appendAttr appends the value of attribute key, if present.
func appendAttr(dst []string, attrs []attrKV, key string) []string {
	if v, ok := get(attrs, key); ok {
		dst = append(dst, v)
	}
	return dst
}

func isListSep(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// refreshURL returns the URL of a <meta http-equiv=refresh> content value
// such as "5; url=next.html" or "0;URL='next.html'" (the HTML standard's
// shared declarative refresh steps, leniently): false when it names none.
func refreshURL(content string) (string, bool) {
	s := strings.TrimLeft(content, " \t\n\r\f")
	s = strings.TrimLeft(s, "0123456789.") // the delay
	s = strings.TrimLeft(s, " \t\n\r\f")
	if s == "" || (s[0] != ';' && s[0] != ',') {
		return "", false
	}
	s = strings.TrimLeft(s[1:], " \t\n\r\f")
	if len(s) >= 3 && strings.EqualFold(s[:3], "url") {
		rest := strings.TrimLeft(s[3:], " \t\n\r\f")
		if strings.HasPrefix(rest, "=") {
			s = strings.TrimLeft(rest[1:], " \t\n\r\f")
		}
	}
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		q := s[0]
		s = s[1:]
		if i := strings.IndexByte(s, q); i >= 0 {
			s = s[:i]
		}
	}
	s = strings.TrimSpace(s)
	return s, s != ""
}

// appendSrcset appends the URLs of a srcset attribute's image candidates
// ("a.png 1x, b.png 2x"): each a run of non-space characters (commas that
// end it trimmed), followed by descriptors up to the next comma.
func appendSrcset(dst []string, set string) []string {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
	i := 0
	for i < len(set) {
		for i < len(set) && (isSpace(set[i]) || set[i] == ',') {
			i++
		}
		start := i
		for i < len(set) && !isSpace(set[i]) {
			i++
		}
		u := set[start:i]
		endsCandidate := strings.HasSuffix(u, ",")
		u = strings.TrimRight(u, ",")
		if u != "" {
			dst = append(dst, u)
		}
		if endsCandidate {
			continue
		}
		depth := 0 // descriptors: to the next comma outside parentheses
		for i < len(set) && (set[i] != ',' || depth > 0) {
			switch set[i] {
			case '(':
				depth++
			case ')':
				depth = max(depth-1, 0)
			}
			i++
		}
	}
	return dst
}

// resolveLinks resolves, filters, normalises and deduplicates hrefs.
func resolveLinks(pageURL, base *url.URL, hrefs []string) []string {
	if base == nil {
		base = pageURL
	}
	// A page's few links are deduplicated by looking through those kept;
	// past smallPage of them, with a map.
	const smallPage = 32
	var seen map[string]struct{}
	if len(hrefs) > smallPage {
		seen = make(map[string]struct{}, len(hrefs))
	}
	links := make([]string, 0, len(hrefs))
	for _, h := range hrefs {
		ref, err := url.Parse(cleanHref(h))
		if err != nil {
			continue
		}
		s, err := Normalize(base.ResolveReference(ref).String())
		if err != nil {
			continue
		}
		if seen != nil {
			if _, dup := seen[s]; dup {
				continue
			}
			seen[s] = struct{}{}
		} else if slices.Contains(links, s) {
			continue
		}
		links = append(links, s)
	}
	return links
}

// cleanHref strips what the URL standard strips from an attribute value:
// leading and trailing C0 controls and spaces, and every tab and newline.
func cleanHref(h string) string {
	h = strings.TrimFunc(h, func(r rune) bool { return r <= ' ' })
	if strings.ContainsAny(h, "\t\r\n") {
		h = strings.NewReplacer("\t", "", "\r", "", "\n", "").Replace(h)
	}
	return h
}

// collapseSpace trims s and turns each run of white space into one space.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
