package crawl

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestParseRobotsSitemaps(t *testing.T) {
	rb := ParseRobots([]byte("Sitemap: http://a.test/s1.xml\nUser-agent: *\nSitemap: http://a.test/s2.xml.gz\nDisallow: /x\nsitemap:\n"), "drover")
	if want := []string{"http://a.test/s1.xml", "http://a.test/s2.xml.gz"}; !slices.Equal(rb.Sitemaps, want) {
		t.Errorf("Sitemaps = %q, want %q", rb.Sitemaps, want)
	}
	if rb.Allowed("/x") {
		t.Error("a Sitemap: line inside a group ended the group's rules")
	}
}

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Sitemaps reads the robots.txt Sitemap: lines and /sitemap.xml, follows
// index files (plain and gzip) and lists each page once.
func TestSitemaps(t *testing.T) {
	mux := http.NewServeMux()
	var origin string
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "User-agent: *\nDisallow: /private/\nSitemap: %s/index.xml\n", origin)
	})
	mux.HandleFunc("/index.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>%[1]s/a.xml</loc></sitemap>
  <sitemap><loc> %[1]s/b.xml.gz </loc><lastmod>2024-01-01</lastmod></sitemap>
  <sitemap><loc>%[1]s/index.xml</loc></sitemap>
</sitemapindex>`, origin)
	})
	mux.HandleFunc("/a.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%[1]s/p1</loc></url><url><loc>%[1]s/p2?a=1&amp;b=2</loc><priority>1</priority></url></urlset>`, origin)
	})
	mux.HandleFunc("/b.xml.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		w.Write(gz(t, fmt.Sprintf(`<urlset><url><loc>%[1]s/p3</loc></url><url><loc>%[1]s/p1</loc></url></urlset>`, origin)))
	})
	mux.HandleFunc("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<urlset><url><loc>%s/p4</loc></url></urlset>`, origin)
	})
	srv := newServer(t, mux)
	origin = srv.URL
	f := newFetcher(t, testConfig())
	got, err := f.Sitemaps(context.Background(), srv.URL+"/start")
	if err != nil {
		t.Fatal(err)
	}
	// breadth first: the robots.txt sitemaps, /sitemap.xml, then the index's children
	want := []string{origin + "/p4", origin + "/p1", origin + "/p2?a=1&b=2", origin + "/p3"}
	if !slices.Equal(got, want) {
		t.Errorf("Sitemaps = %q\nwant       %q", got, want)
	}
}

// A site without sitemaps gives none and no error; a broken one is an
// error that keeps what was read.
func TestSitemapsMissingAndBroken(t *testing.T) {
	srv := newServer(t, http.NotFoundHandler())
	f := newFetcher(t, testConfig())
	if got, err := f.Sitemaps(context.Background(), srv.URL+"/"); err != nil || len(got) != 0 {
		t.Errorf("no sitemap: got %q, %v; want nothing, no error", got, err)
	}
	var origin string
	broken := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sitemap.xml" {
			fmt.Fprintf(w, `<urlset><url><loc>%s/ok</loc></url><url><loc>`, origin)
			return
		}
		http.NotFound(w, r)
	}))
	origin = broken.URL
	got, err := f.Sitemaps(context.Background(), broken.URL+"/")
	if err == nil || !strings.Contains(err.Error(), "sitemap.xml") {
		t.Errorf("broken sitemap: err = %v, want one naming it", err)
	}
	if !slices.Equal(got, []string{origin + "/ok"}) {
		t.Errorf("broken sitemap: got %q, want the URL read before the error", got)
	}
}

func FuzzParseSitemap(f *testing.F) {
	f.Add(`<urlset><url><loc>http://a/</loc></url></urlset>`)
	f.Add(`<sitemapindex><sitemap><loc>http://a/s.xml</loc></sitemap></sitemapindex>`)
	f.Add(`<<<>`)
	f.Fuzz(func(t *testing.T, s string) {
		pages, children, _ := parseSitemap(strings.NewReader(s))
		if len(pages)+len(children) > maxSitemapURLs {
			t.Fatalf("%d URLs, limit %d", len(pages)+len(children), maxSitemapURLs)
		}
	})
}

// The fetcher applies the robots hints and the requisites setting to a
// page's links.
func TestFetchLinkPolicy(t *testing.T) {
	mux := http.NewServeMux()
	page := `<link rel=canonical href="/canon"><a href="/a">a</a><a rel=nofollow href="/nf">nf</a><img src="/i.png">`
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, page)
	})
	mux.HandleFunc("/meta-nofollow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<meta name=robots content="noindex, nofollow">`+page)
	})
	mux.HandleFunc("/header-nofollow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("X-Robots-Tag", "otherbot: noindex")
		w.Header().Add("X-Robots-Tag", "drover: nofollow")
		fmt.Fprint(w, page)
	})
	mux.HandleFunc("/s.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		fmt.Fprint(w, `body{background:url(bg.png)}`)
	})
	srv := newServer(t, mux)
	u := func(p ...string) []string {
		for i := range p {
			p[i] = srv.URL + p[i]
		}
		return p
	}
	tests := []struct {
		name              string
		path              string
		requisites, ignor bool
		links             []string
		noindex, nofollow bool
	}{
		{"plain", "/plain", false, false, u("/canon", "/a"), false, false},
		{"plain with requisites", "/plain", true, false, u("/canon", "/a", "/i.png"), false, false},
		{"nofollow links kept when ignoring robots", "/plain", false, true, u("/canon", "/a", "/nf"), false, false},
		{"meta nofollow", "/meta-nofollow", false, false, nil, true, true},
		{"meta nofollow keeps requisites", "/meta-nofollow", true, false, u("/i.png"), true, true},
		{"meta nofollow ignored", "/meta-nofollow", false, true, u("/canon", "/a", "/nf"), true, true},
		{"X-Robots-Tag for drover", "/header-nofollow", false, false, nil, false, true},
		{"css not parsed without requisites", "/s.css", false, false, nil, false, false},
		{"css parsed with requisites", "/s.css", true, false, u("/bg.png"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Requisites, cfg.IgnoreRobots = tt.requisites, tt.ignor
			p := newFetcher(t, cfg).Fetch(context.Background(), srv.URL+tt.path)
			if p.Outcome != OK {
				t.Fatalf("%v", p)
			}
			if !slices.Equal(p.Links, tt.links) {
				t.Errorf("Links = %q\nwant    %q", p.Links, tt.links)
			}
			if p.NoIndex != tt.noindex || p.NoFollow != tt.nofollow {
				t.Errorf("NoIndex, NoFollow = %v, %v; want %v, %v", p.NoIndex, p.NoFollow, tt.noindex, tt.nofollow)
			}
			if strings.HasPrefix(tt.path, "/plain") && p.Canonical != srv.URL+"/canon" {
				t.Errorf("Canonical = %q", p.Canonical)
			}
		})
	}
}
