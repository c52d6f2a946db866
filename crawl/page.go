package crawl

import (
	"fmt"
	"time"
)

// Outcome classifies a fetch the way the broker does.
type Outcome string

// The outcomes.
const (
	// OK: the page was fetched (any 2xx, 3xx or 4xx status but 429, which
	// is a fact about the page) or robots.txt disallows it.
	OK Outcome = "ok"
	// Internal: the fetch failed in a way a retry may fix (a 5xx status
	// other than 503, a timeout, a connection error). The broker retries
	// it up to its failure budget.
	Internal Outcome = "internal"
	// External: the job itself is wrong (an unparsable or non-http(s)
	// URL); retrying cannot help.
	External Outcome = "external"
	// Throttled: the server asked us to slow down (429 or 503); retry
	// after Page.RetryAfter, without charging the failure budget.
	Throttled Outcome = "throttled"
)

// ErrDisallowed is the text of Page.Err for a URL robots.txt disallows.
const ErrDisallowed = "disallowed by robots.txt"

// Page is the result of fetching one URL.
type Page struct {
	// URL is the URL as given to Fetch.
	URL string
	// FinalURL is the normalised URL that was requested or, for a 3xx
	// answer with a Location, the normalised redirect target (which is
	// then also the page's only link; see the package doc on redirects).
	FinalURL string
	// Status is the HTTP status; 0 when no answer came (a connection
	// error, a bad URL, or a URL disallowed by robots.txt).
	Status int
	// ContentType is the Content-Type header as sent.
	ContentType string
	// Title is the text of the page's <title> (text/html only).
	Title string
	// Links are the page's outbound links (see Document.Links), parsed
	// from text/html bodies of 2xx answers only (an error page's links are
	// not followed), or a redirect's target.
	Links []string
	// Canonical is the page's <link rel=canonical> target, if any.
	Canonical string
	// NoIndex and NoFollow are the page's robots directives (<meta
	// name=robots> or an X-Robots-Tag header): noindex is recorded;
	// nofollow made the fetcher drop the page's links (unless
	// Config.IgnoreRobots), requisites excepted.
	NoIndex, NoFollow bool
	// Bytes is how many body bytes were read (after any transfer
	// decompression), at most Config.MaxBodyBytes.
	Bytes int64
	// Robots is the robots.txt of the page's origin when this fetch is
	// the first to use a copy this Fetcher fetched itself: a worker
	// reports it to the fleet (UseRobots is the other end). Nil otherwise.
	Robots *RobotsCopy
	// Truncated is set when the body was longer than Config.MaxBodyBytes.
	Truncated bool
	// WARC is where the fetch's records are, when archiving (WithWARC).
	WARC WARCLocation
	// FetchedAt is when the request started (after politeness waits).
	FetchedAt time.Time
	// FetchDuration is how long the request and body read took.
	FetchDuration time.Duration
	// RetryAfter is the server's Retry-After for a Throttled page (0 when
	// it gave none), or how long robots.txt stays unreachable.
	RetryAfter time.Duration
	// Outcome classifies the fetch for the broker.
	Outcome Outcome
	// Disallowed is set when robots.txt disallows the URL: it was not
	// fetched, Outcome is OK, Status 0 and Err is ErrDisallowed.
	Disallowed bool
	// Refused is set when the private-address guard refused to connect
	// (see Config.AllowPrivate): not fetched, Outcome OK, Status 0, and
	// Err says which address the host resolved to.
	Refused bool
	// Err says what went wrong, for Internal, External and Throttled
	// outcomes (and ErrDisallowed); empty for a plain OK.
	Err string
}

// Record is one line of the crawl's JSONL result file: a fetched page and
// the job facts around it (depth, which worker, which attempt).
type Record struct {
	URL         string `json:"url"`
	FinalURL    string `json:"final_url"`
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Title       string `json:"title"`
	Depth       int    `json:"depth"`
	// Parent is the page whose links first named this one ("" for a seed).
	Parent    string    `json:"parent,omitempty"`
	LinksOut  int       `json:"links_out"`
	Bytes     int64     `json:"bytes"`
	FetchMS   float64   `json:"fetch_ms"`
	Worker    string    `json:"worker"`
	Attempt   int       `json:"attempt"`
	FetchedAt time.Time `json:"fetched_at"`
	// Outcome is the page's Outcome; a record is normally written for ok
	// pages, but a caller may also record the final failure of a job.
	Outcome Outcome `json:"outcome"`
	// Disallowed is set for URLs robots.txt disallows (not fetched).
	Disallowed bool `json:"disallowed,omitempty"`
	// Refused is set for URLs on private addresses a crawl from a public
	// seed does not connect to (not fetched; Error says why).
	Refused bool `json:"refused,omitempty"`
	// Canonical is the page's <link rel=canonical> target, if any.
	Canonical string `json:"canonical,omitempty"`
	// NoIndex and NoFollow are the page's robots directives.
	NoIndex  bool `json:"noindex,omitempty"`
	NoFollow bool `json:"nofollow,omitempty"`
	// Error is Page.Err.
	Error string `json:"error,omitempty"`
	// WARCFile, WARCOffset and WARCResponseOffset say where the page's
	// request and response records are, when the fetcher archives
	// (WithWARC): the file's name and the offsets of the two records'
	// gzip members in it. Not in the CSV file.
	WARCFile           string `json:"warc_file,omitempty"`
	WARCOffset         int64  `json:"warc_offset,omitempty"`
	WARCResponseOffset int64  `json:"warc_response_offset,omitempty"`
}

// Record turns the page into a result record, adding the job's depth, the
// worker that fetched it and the attempt number (1 for the first).
func (p Page) Record(depth int, worker string, attempt int) Record {
	return Record{
		URL:         p.URL,
		FinalURL:    p.FinalURL,
		Status:      p.Status,
		ContentType: p.ContentType,
		Title:       p.Title,
		Depth:       depth,
		LinksOut:    len(p.Links),
		Bytes:       p.Bytes,
		FetchMS:     float64(p.FetchDuration.Microseconds()) / 1000,
		Worker:      worker,
		Attempt:     attempt,
		FetchedAt:   p.FetchedAt.UTC(),
		Outcome:     p.Outcome,
		Disallowed:  p.Disallowed,
		Refused:     p.Refused,
		Canonical:   p.Canonical,
		NoIndex:     p.NoIndex,
		NoFollow:    p.NoFollow,
		Error:       p.Err,
		WARCFile:    p.WARC.File,
		WARCOffset:  p.WARC.Offset,
		// The response follows the request in the same file.
		WARCResponseOffset: p.WARC.ResponseOffset,
	}
}

// String summarises the page for logs: outcome, status, URL and error.
func (p Page) String() string {
	s := fmt.Sprintf("%s %d %s", p.Outcome, p.Status, p.URL)
	if p.Err != "" {
		s += ": " + p.Err
	}
	return s
}
