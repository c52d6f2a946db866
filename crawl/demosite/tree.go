package demosite

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Tree serves n small HTML pages /p/0 … /p/(n-1), for benchmarks that need
// a site of a given size: page i links to pages 10i+1 … 10i+10, so a crawl
// from /p/0 reaches all n level by level, each page linked from exactly
// one other. Anything else, robots.txt included, is 404 (allow all).
func Tree(n int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil || i < 0 || i >= n || !strings.HasPrefix(r.URL.Path, "/p/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var b strings.Builder
		fmt.Fprintf(&b, "<!doctype html><html><head><title>page %d</title></head><body><h1>page %d</h1><p>", i, i)
		for c := 10*i + 1; c <= 10*i+10 && c < n; c++ {
			fmt.Fprintf(&b, `<a href="/p/%d">page %d</a> `, c, c)
		}
		b.WriteString("</p></body></html>")
		_, _ = io.WriteString(w, b.String())
	})
}
