package crawl

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// Sitemap limits: the sitemaps protocol's own (50,000 URLs and 50 MB
// uncompressed per file) and how many files one crawl reads.
const (
	maxSitemapFiles = 50
	maxSitemapURLs  = 50_000
	maxSitemapBytes = 50 << 20
	maxSitemapLinks = 200_000
)

// Sitemaps returns the page URLs listed in the sitemaps of seed's origin:
// those its robots.txt names on Sitemap: lines and /sitemap.xml, following
// sitemap index files (at most 50 files in all), gzip-compressed or not.
// Each URL is normalised and listed once. Sitemaps are fetched like pages:
// with the Fetcher's User-Agent, within the host's politeness limits, and
// /sitemap.xml only when robots.txt allows it. Problems (a missing
// sitemap, a malformed one) are returned joined with whatever was found.
func (f *Fetcher) Sitemaps(ctx context.Context, seed string) ([]string, error) {
	_, u, err := Parse(seed)
	if err != nil {
		return nil, err
	}
	origin := u.Scheme + "://" + u.Host
	ctx = f.withGuard(ctx, seed)
	var queue []string
	rb := &Robots{}
	if !f.cfg.IgnoreRobots {
		if r, _, _ := f.robotsFor(ctx, u); r != nil { // its report went with the seed's Fetch
			rb = r
		}
	}
	for _, s := range rb.Sitemaps {
		if n, err := Normalize(s); err == nil && !slices.Contains(queue, n) {
			queue = append(queue, n)
		}
	}
	if def := origin + "/sitemap.xml"; !slices.Contains(queue, def) && rb.Allowed("/sitemap.xml") {
		queue = append(queue, def)
	}
	var links []string
	seen := map[string]bool{}
	var errs []error
	for i := 0; i < len(queue) && i < maxSitemapFiles && len(links) < maxSitemapLinks; i++ {
		pages, children, err := f.readSitemap(ctx, queue[i])
		if err != nil {
			errs = append(errs, err)
		}
		for _, c := range children {
			if n, err := Normalize(c); err == nil && !slices.Contains(queue, n) {
				queue = append(queue, n)
			}
		}
		for _, p := range pages {
			if n, err := Normalize(p); err == nil && !seen[n] && len(links) < maxSitemapLinks {
				seen[n] = true
				links = append(links, n)
			}
		}
	}
	return links, errors.Join(errs...)
}

// readSitemap fetches one sitemap and returns its page URLs (a urlset) or
// the sitemaps it lists (a sitemapindex).
func (f *Fetcher) readSitemap(ctx context.Context, sitemapURL string) (pages, children []string, err error) {
	_, u, err := Parse(sitemapURL)
	if err != nil {
		return nil, nil, err
	}
	h := f.hostFor(u.Host)
	defer f.hostDone(h)
	release, err := f.acquire(ctx, h, u, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("sitemap %s: %w", sitemapURL, err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sitemapURL, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("sitemap %s: %w", sitemapURL, err)
	}
	req.Header.Set("User-Agent", f.agent)
	resp, err := f.client(ctx).Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("sitemap %s: %s", sitemapURL, describeFetchError(ctx, err, f.cfg.Timeout))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		drain(resp.Body)
		if resp.StatusCode == http.StatusNotFound && strings.HasSuffix(sitemapURL, "/sitemap.xml") {
			return nil, nil, nil // the conventional place is only a guess
		}
		return nil, nil, fmt.Errorf("sitemap %s: %s, want 200 OK", sitemapURL, resp.Status)
	}
	br := bufio.NewReader(io.LimitReader(resp.Body, maxSitemapBytes))
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("sitemap %s: gzip: %w", sitemapURL, err)
		}
		defer zr.Close()
		r = io.LimitReader(zr, maxSitemapBytes)
	}
	pages, children, err = parseSitemap(r)
	if err != nil {
		err = fmt.Errorf("sitemap %s: %w", sitemapURL, err)
	}
	return pages, children, err
}

// parseSitemap reads a sitemap (sitemaps.org protocol 0.9): the <loc> of
// every <url> of a <urlset> are pages, those of every <sitemap> of a
// <sitemapindex> are further sitemaps. Namespaces are not checked, and
// what was read before a syntax error is returned with it.
func parseSitemap(r io.Reader) (pages, children []string, err error) {
	d := xml.NewDecoder(r)
	d.Strict = false
	d.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	var stack []string
	var loc strings.Builder
	for len(pages)+len(children) < maxSitemapURLs {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return pages, children, nil
		}
		if err != nil {
			return pages, children, fmt.Errorf("xml: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			stack = append(stack, strings.ToLower(t.Name.Local))
			loc.Reset()
		case xml.CharData:
			if len(stack) > 0 && stack[len(stack)-1] == "loc" && loc.Len() < 4096 {
				loc.Write(t)
			}
		case xml.EndElement:
			if n := len(stack); n >= 2 && stack[n-1] == "loc" {
				if v := strings.TrimSpace(loc.String()); v != "" {
					switch stack[n-2] {
					case "url":
						pages = append(pages, v)
					case "sitemap":
						children = append(children, v)
					}
				}
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	return pages, children, nil
}
