package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"drover/admin"
	"drover/net/client"
)

func main() {
	ctx := context.Background()
	a, err := client.DialAdmin(ctx, client.AdminOptions{Connect: os.Args[1], ReadOnly: true})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	q := func(q admin.Query) (admin.Page, time.Duration) {
		t0 := time.Now()
		p, err := a.Query(ctx, q)
		if err != nil {
			panic(err)
		}
		return p, time.Since(t0)
	}
	for _, f := range []string{"", "host=10.30.2.7", "page/99999", "state=claimed"} {
		p, d := q(admin.Query{View: admin.ViewJobs, Limit: 50, Filter: f})
		fmt.Printf("filter %-16q offset 0 limit 50: %d rows, total %d, after %v, %v\n", f, len(p.Jobs), p.Total, p.After != "", d.Round(time.Microsecond))
	}
	// scrolling by offset, 50 rows a page, 40 pages
	var sum, worst time.Duration
	for i := 0; i < 40; i++ {
		_, d := q(admin.Query{View: admin.ViewJobs, Offset: i * 50, Limit: 50})
		sum += d
		worst = max(worst, d)
	}
	fmt.Printf("scroll by offset, 40 pages of 50: mean %v, worst %v\n", (sum / 40).Round(time.Microsecond), worst.Round(time.Microsecond))
	// by cursor
	sum, worst = 0, 0
	qq := admin.Query{View: admin.ViewJobs, Limit: 50}
	for i := 0; i < 40; i++ {
		p, d := q(qq)
		sum += d
		worst = max(worst, d)
		qq.After = p.After
	}
	fmt.Printf("page by cursor, 40 pages of 50: mean %v, worst %v\n", (sum / 40).Round(time.Microsecond), worst.Round(time.Microsecond))
	for _, off := range []int{10000, 50000, 99000} {
		p, d := q(admin.Query{View: admin.ViewJobs, Offset: off, Limit: 50})
		fmt.Printf("jump to offset %d: %d rows (%s), %v\n", off, len(p.Jobs), first(p), d.Round(time.Microsecond))
		p, d = q(admin.Query{View: admin.ViewJobs, Offset: off, Limit: 50})
		fmt.Printf("  again at once: %d rows (%s), %v\n", len(p.Jobs), first(p), d.Round(time.Microsecond))
	}
	// a filter matching nothing, paged to the end by cursor
	qq = admin.Query{View: admin.ViewJobs, Limit: 50, Filter: "nomatch"}
	pages := 0
	sum, worst = 0, 0
	for {
		p, d := q(qq)
		pages++
		sum += d
		worst = max(worst, d)
		if p.After == "" {
			break
		}
		qq.After = p.After
	}
	fmt.Printf("filter matching nothing, walked to the end: %d pages, mean %v, worst %v\n", pages, (sum / time.Duration(pages)).Round(time.Microsecond), worst.Round(time.Microsecond))
}

func first(p admin.Page) string {
	if len(p.Jobs) == 0 {
		return "-"
	}
	return p.Jobs[0].URL
}
