package crawl

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Document is what ExtractLinks finds in an HTML page.
type Document struct {
	// Title is the text of the first <title>, whitespace collapsed.
	Title string
	// Links are the targets of a[href], link[href] and area[href]:
	// resolved against the page URL or its <base href>, normalised (see
	// Normalize, so without fragments), http(s) only, each once, in
	// document order.
	Links []string
}

// ExtractLinks reads an HTML document fetched from pageURL (which must be
// absolute) and returns its title and links. It streams the document with
// the golang.org/x/net/html tokenizer, so malformed HTML is read the way a
// browser would tokenise it and never fails; the error is the reader's.
// Hrefs that do not parse or are not http(s) (mailto:, javascript:, data:,
// tel:, ...) are skipped. The first <base href> applies to every link of
// the document, including those before it.
func ExtractLinks(pageURL *url.URL, r io.Reader) (Document, error) {
	var doc Document
	var hrefs []string
	var base *url.URL
	inTitle, haveTitle := false, false
	var title strings.Builder
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
			doc.Links = resolveLinks(pageURL, base, hrefs)
			if err != nil {
				return doc, fmt.Errorf("reading html of %s: %w", pageURL, err)
			}
			return doc, nil
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch atom.Lookup(name) {
			case atom.A, atom.Link, atom.Area:
				if href, ok := attr(z, hasAttr, "href"); ok {
					hrefs = append(hrefs, href)
				}
			case atom.Base:
				if href, ok := attr(z, hasAttr, "href"); ok && base == nil {
					if b, err := pageURL.Parse(cleanHref(href)); err == nil {
						base = b
					}
				}
			case atom.Title:
				inTitle = !haveTitle && tt == html.StartTagToken
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); atom.Lookup(name) == atom.Title && inTitle {
				inTitle, haveTitle = false, true
			}
		case html.TextToken:
			if inTitle {
				title.Write(z.Text())
			}
		}
	}
}

// attr returns the value of the current tag's attribute key.
func attr(z *html.Tokenizer, more bool, key string) (string, bool) {
	for more {
		var k, v []byte
		k, v, more = z.TagAttr()
		if string(k) == key {
			return string(v), true
		}
	}
	return "", false
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
