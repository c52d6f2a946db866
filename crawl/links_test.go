package crawl

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestExtractLinks(t *testing.T) {
	page := "http://example.com/dir/page.html"
	tests := []struct {
		name  string
		html  string
		title string
		links []string
	}{
		{
			name:  "relative, absolute, root-relative",
			html:  `<a href="a.html">a</a><a href="/b">b</a><a href="http://other.org/c">c</a>`,
			links: []string{"http://example.com/dir/a.html", "http://example.com/b", "http://other.org/c"},
		},
		{
			name:  "link and area elements, other tags ignored",
			html:  `<link rel=stylesheet href="s.css"><map><area href="m"></map><img src="i.png"><script src="j.js"></script><iframe src="f"></iframe>`,
			links: []string{"http://example.com/dir/s.css", "http://example.com/dir/m"},
		},
		{
			name:  "fragments dropped and deduplicated",
			html:  `<a href="x#1">1</a><a href="x#2">2</a><a href="./x">3</a><a href="../dir/x">4</a><a href="#top">top</a>`,
			links: []string{"http://example.com/dir/x", "http://example.com/dir/page.html"},
		},
		{
			name:  "non-http schemes skipped",
			html:  `<a href="mailto:a@b.c">m</a><a href="javascript:void(0)">j</a><a href="data:text/html,hi">d</a><a href="tel:+1">t</a><a href="ftp://x/">f</a><a href="https://ok.org">ok</a>`,
			links: []string{"https://ok.org/"},
		},
		{
			name:  "normalised spellings",
			html:  `<a href="HTTP://Example.COM:80/dir/./y">1</a><a href="http://example.com/dir/y">2</a>`,
			links: []string{"http://example.com/dir/y"},
		},
		{
			name:  "base href applies to links before and after it",
			html:  `<a href="early">e</a><base href="http://cdn.org/root/"><base href="http://ignored.org/"><a href="late">l</a>`,
			links: []string{"http://cdn.org/root/early", "http://cdn.org/root/late"},
		},
		{
			name:  "relative base href",
			html:  `<head><base href="../other/"></head><a href="z">z</a>`,
			links: []string{"http://example.com/other/z"},
		},
		{
			name:  "whitespace and newlines in href",
			html:  "<a href=\"  /sp\nace \t\">x</a><a href=\"\">self</a>",
			links: []string{"http://example.com/space", "http://example.com/dir/page.html"},
		},
		{
			name:  "bad hrefs skipped",
			html:  `<a href="http://exa mple.com/">bad</a><a href="http://[::1">bad</a><a>no href</a><a href="%zz">bad</a><a href="fine">ok</a>`,
			links: []string{"http://example.com/dir/fine"},
		},
		{
			name:  "entities in attributes",
			html:  `<a href="/q?a=1&amp;b=2">q</a>`,
			links: []string{"http://example.com/q?a=1&b=2"},
		},
		{
			name:  "title collapsed and unescaped",
			html:  "<html><head><title>\n  Fish &amp;\n Chips  </title></head><body><title>second</title></body>",
			title: "Fish & Chips",
			links: []string{},
		},
		{
			name:  "markup inside title is text",
			html:  "<title>a <b>bold</b> move</title>",
			title: "a <b>bold</b> move",
			links: []string{},
		},
		{
			name:  "malformed html",
			html:  `<html><body><a href="ok1"<a href='ok2'>x</a><p><a href=ok3>`,
			links: []string{"http://example.com/dir/ok1", "http://example.com/dir/ok3"},
		},
		{
			name:  "upper-case tags",
			html:  `<A HREF="up">x</A><TITLE>T</TITLE>`,
			title: "T",
			links: []string{"http://example.com/dir/up"},
		},
	}
	base, _ := url.Parse(page)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := ExtractLinks(base, strings.NewReader(tt.html))
			if err != nil {
				t.Fatal(err)
			}
			if doc.Title != tt.title {
				t.Errorf("Title = %q, want %q", doc.Title, tt.title)
			}
			if !slices.Equal(doc.Links, tt.links) {
				t.Errorf("Links = %q\nwant    %q", doc.Links, tt.links)
			}
		})
	}
}

type failingReader struct{ data io.Reader }

var errBoom = errors.New("boom")

func (f failingReader) Read(b []byte) (int, error) {
	n, err := f.data.Read(b)
	if err == io.EOF {
		return n, errBoom
	}
	return n, err
}

func TestExtractLinksReaderError(t *testing.T) {
	base, _ := url.Parse("http://example.com/")
	doc, err := ExtractLinks(base, failingReader{strings.NewReader(`<a href="/a">a</a>`)})
	if !errors.Is(err, errBoom) {
		t.Fatalf("err = %v, want the reader's error", err)
	}
	if len(doc.Links) != 1 {
		t.Errorf("links read before the error were lost: %q", doc.Links)
	}
}

// Pages with few links and pages with many deduplicate alike (a scan of
// the kept links, or a map past 32 of them).
func TestExtractLinksDedupManyAndFew(t *testing.T) {
	page, _ := url.Parse("http://example.com/")
	for _, n := range []int{3, 32, 33, 200} {
		var b strings.Builder
		var want []string
		for i := range n {
			fmt.Fprintf(&b, `<a href="/p%d">x</a><a href="/p%d#again">y</a><a href="HTTP://EXAMPLE.COM/p%d">z</a>`, i, i, i)
			want = append(want, fmt.Sprintf("http://example.com/p%d", i))
		}
		doc, err := ExtractLinks(page, strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(doc.Links, want) {
			t.Errorf("%d distinct links, each 3 times: got %d links %q..., want each once in order", n, len(doc.Links), doc.Links[:min(5, len(doc.Links))])
		}
	}
}
