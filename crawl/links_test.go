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
			name:  "link, area, iframe and frame elements; requisites are not links",
			html:  `<link rel=stylesheet href="s.css"><link rel=next href="n"><map><area href="m"></map><img src="i.png"><script src="j.js"></script><iframe src="f"></iframe><frameset><frame src="g"></frameset>`,
			links: []string{"http://example.com/dir/n", "http://example.com/dir/m", "http://example.com/dir/f", "http://example.com/dir/g"},
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

// Every link form: where each lands in the Document.
func TestExtractLinksForms(t *testing.T) {
	base, _ := url.Parse("http://example.com/dir/page.html")
	src := `<html><head>
<base href="/b/">
<link rel="canonical" href="/canon">
<link rel="stylesheet" href="s.css"><link rel="icon shortcut" href="/favicon.ico">
<link rel="alternate" hreflang="fr" href="fr.html"><link rel=dns-prefetch href="//cdn.example.com">
<link rel="nofollow" href="lnf">
<meta http-equiv="Refresh" content="5; URL='refresh.html'">
<meta name="robots" content="NOINDEX">
<style>body { background: url("bg.png") } /* url(commented.png) */ @import "imp.css"; .x{content:"url(no.png)"}</style>
</head><body background="bb.png">
<a href="a1">1</a><a rel="nofollow noopener" href="nf">nf</a><a rel=nofollow href="a1">again</a>
<iframe src="if.html"></iframe>
<img src="i.png" srcset="i-1x.png 1x, i,2x.png 2x,i-3x.png"><picture><source srcset="p.webp 100w"></picture>
<script src="j.js"></script><video src="v.mp4" poster="v.jpg"></video><object data="o.swf"></object>
<input type=image src="btn.png"><div style="background-image:url(div.png)">x</div>
</body></html>`
	doc, err := ExtractLinks(base, strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	b := func(p ...string) []string {
		for i := range p {
			p[i] = "http://example.com/b/" + p[i]
		}
		return p
	}
	wantLinks := append([]string{"http://example.com/canon"}, b("fr.html", "refresh.html", "a1", "if.html")...)
	if !slices.Equal(doc.Links, wantLinks) {
		t.Errorf("Links = %q\nwant    %q", doc.Links, wantLinks)
	}
	if want := b("lnf", "nf"); !slices.Equal(doc.NoFollow, want) {
		t.Errorf("NoFollow = %q, want %q (a1 is also linked without nofollow)", doc.NoFollow, want)
	}
	wantReqs := append(b("s.css"), "http://example.com/favicon.ico")
	wantReqs = append(wantReqs, b("bg.png", "imp.css", "bb.png", "i.png", "i-1x.png", "i,2x.png", "i-3x.png", "p.webp",
		"j.js", "v.mp4", "v.jpg", "o.swf", "btn.png", "div.png")...)
	if !slices.Equal(doc.Requisites, wantReqs) {
		t.Errorf("Requisites = %q\nwant         %q", doc.Requisites, wantReqs)
	}
	if doc.Canonical != "http://example.com/canon" {
		t.Errorf("Canonical = %q", doc.Canonical)
	}
	if !doc.MetaNoIndex || doc.MetaNoFollow {
		t.Errorf("MetaNoIndex, MetaNoFollow = %v, %v; want true, false", doc.MetaNoIndex, doc.MetaNoFollow)
	}
}

func TestRefreshURL(t *testing.T) {
	for in, want := range map[string]string{
		"0; url=a.html": "a.html", "5;URL='b c.html'": "b c.html", `3, url="q.html"`: "q.html",
		"1; next.html": "next.html", "  2.5 ;  url = x ": "x", "10": "", "": "", "5;": "", "url=x": "",
	} {
		got, ok := refreshURL(in)
		if got != want || ok != (want != "") {
			t.Errorf("refreshURL(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestExtractCSSLinks(t *testing.T) {
	base, _ := url.Parse("http://example.com/css/site.css")
	css := `@import url(base.css); @IMPORT 'print.css' print;
/* url(no.png) */ .a{background:URL( "img/a.png" )} .b{src:url(/font.woff2) format("woff2")}
.c::after{content:"url(no2.png)"} .d{background:xurl(no3.png)} .e{background:url(data:image/png;base64,AAAA)}
.f{background:url(a.png)}`
	got, err := ExtractCSSLinks(base, strings.NewReader(css))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://example.com/css/base.css", "http://example.com/css/print.css",
		"http://example.com/css/img/a.png", "http://example.com/font.woff2", "http://example.com/css/a.png"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func FuzzExtractCSSLinks(f *testing.F) {
	f.Add(`@import "a.css"; .x{background:url('b.png')} /* c */`)
	f.Add(`url(`)
	f.Add(`"unterminated`)
	base, _ := url.Parse("http://example.com/")
	f.Fuzz(func(t *testing.T, css string) {
		links, _ := ExtractCSSLinks(base, strings.NewReader(css))
		for _, l := range links {
			if _, err := Normalize(l); err != nil {
				t.Fatalf("link %q is not in normal form: %v", l, err)
			}
		}
	})
}
