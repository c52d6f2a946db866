// Package crawl is drover's crawl handler: it fetches one URL politely and
// turns the response into a Page (status, title, outbound links, outcome)
// that a worker reports to the broker, and it writes crawl results as JSONL.
//
// The pieces:
//
//   - Config holds the crawl settings (user agent, timeouts, body limit,
//     per-host concurrency and delay, scope, depth and page limits) and
//     validates them up front, naming the field that is wrong.
//   - Fetcher fetches a URL (safe for concurrent use by a worker's slots):
//     robots.txt is fetched once per origin and cached (or taken from a
//     copy another worker of the fleet fetched: UseRobots; a file it
//     fetched itself is in the first Page that used it, Page.Robots, for
//     the worker to report), each host gets at
//     most Config.PerHost concurrent fetches whose starts are spaced by
//     max(MinDelay, Crawl-delay), and the response is classified into an
//     Outcome the broker understands (ok, internal, external, throttled).
//   - ExtractLinks parses HTML with golang.org/x/net/html's tokenizer:
//     navigational links (a, area, link, iframe, frame, meta refresh),
//     rel=nofollow links apart, page requisites (img, srcset, script,
//     style sheets, CSS url() in <style> and style attributes),
//     <link rel=canonical> and <meta name=robots>, honouring <base href>,
//     giving absolute, normalised, fragment-free http(s) URLs in document
//     order. ExtractCSSLinks reads a style sheet's url() and @import. The
//     Fetcher drops nofollow links (unless Config.IgnoreRobots) and adds
//     requisites only with Config.Requisites.
//   - Fetcher.Sitemaps reads a seed origin's sitemaps (robots.txt
//     Sitemap: lines, /sitemap.xml, index files, gzip) as a link source.
//   - Scope decides whether a discovered link belongs to the crawl (host,
//     domain or prefix of the seed), and Config.Follow applies scope and the
//     depth limit to one page's links.
//   - Record and JSONLWriter are the result file: one JSON object per line,
//     each written whole and flushed, so a crash leaves every complete line
//     parseable.
//
// # Redirects
//
// The Fetcher does not follow redirects. A 3xx answer is an ordinary page
// (Outcome OK, its status recorded); its Location, resolved and normalised,
// is Page.FinalURL and the page's only link, so the caller submits the
// redirect target as a new key and the coordinator deduplicates it like any
// other link. This keeps every HTTP request a key of its own: the target is
// checked against scope, robots.txt and the per-host limits like any page, a
// redirect loop ends in the coordinator's dedup, a long chain is bounded by
// the depth limit (each hop is one level), and no page is ever fetched twice
// because it was both linked and redirected to.
//
// # Robots
//
// A URL that robots.txt disallows is not fetched: Fetch answers at once with
// Outcome OK, Status 0, Disallowed true and Err "disallowed by robots.txt".
// It is a fact about the page, like a 404, and not a failure to retry.
// robots.txt itself follows RFC 9309: a 4xx answer allows everything; a 5xx
// or 429 answer disallows the whole origin for a while (a minute, or the
// server's Retry-After), during which its pages come back Throttled with
// RetryAfter set to the rest of that while, so the broker backs the host
// off and retries; after robotsGiveUp such answers in a row pages come back
// Internal instead, so that they end failed under the broker's retry budget
// rather than keeping a crawl alive forever. A network error fetching
// robots.txt (connection refused, DNS, timeout) makes the page Internal, as
// fetching the page itself would, and is not cached: the next attempt asks
// again.
//
// These limits are per Fetcher, that is per worker process. A fleet's
// politeness is the coordinator's (coord/broker, polite.go): it dispatches
// a host's jobs within the fleet's limits whatever the number of workers,
// and a worker's own PerHost and MinDelay, when set, are a local cap that
// can only lower that rate (drover worker leaves them at 0, no limit,
// unless --crawl-per-host or --crawl-min-delay is given).
package crawl
