package job

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/crawl"
)

// Sink receives finished jobs from the reactor goroutine (which must
// never block on it), writes them as JSONL from a goroutine of its own and
// keeps the counts the crawl summary reports. With a store, mark holds each
// store batch back until the records of the pages it marks done are
// written (server.Options.BeforeCommit).
type Sink struct {
	mu       sync.Mutex
	cond     *sync.Cond // the writer waits on it for records
	progress *sync.Cond // Mark's functions wait on it for the writer
	queue    []broker.Finished
	added    uint64 // records ever added
	written  uint64 // records the writer has written (or failed to)
	closed   bool
	exited   bool // the writer has stopped: nothing more will be written
	done     chan struct{}
	w        crawl.RecordWriter // nil: records are only counted
	err      error
	// For the demo's check against the site (unless keep is false): the
	// latest record of each URL, the job that fetched it, and the URLs two
	// different jobs fetched (a dedup failure; one job finishing twice, after
	// an operator requeued it, is not one).
	records map[string]crawl.Record
	jobOf   map[string]uint64
	dups    []string
	keep    bool

	pages      int
	failed     int
	disallowed int
	refused    int // not fetched: on a private address (crawl.RefusedError)
	statuses   map[int]int
}

// NewSink starts a sink writing to w (nil: records are only counted);
// keep keeps the latest record of each URL for Records.
func NewSink(w crawl.RecordWriter, keep bool) *Sink {
	s := newSink(w, keep)
	go s.run()
	return s
}

// newSink is NewSink without its writer goroutine.
func newSink(w crawl.RecordWriter, keep bool) *Sink {
	s := &Sink{w: w, keep: keep, done: make(chan struct{}), statuses: map[int]int{},
		records: map[string]crawl.Record{}, jobOf: map[string]uint64{}}
	s.cond, s.progress = sync.NewCond(&s.mu), sync.NewCond(&s.mu)
	return s
}

// Add queues a finished job; it never blocks for I/O.
func (s *Sink) Add(f broker.Finished) {
	s.mu.Lock()
	s.queue = append(s.queue, f)
	s.added++
	s.mu.Unlock()
	s.cond.Signal()
}

// Mark returns a function that waits until every record added so far is
// written (or the writer has stopped). The reactor calls Mark after a
// step's finished jobs were added; the store runs the function before it
// writes the step's batch, so a page is never done in the store before its
// record is in the results file, whenever the process dies.
func (s *Sink) Mark() func() {
	s.mu.Lock()
	target := s.added
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for s.written < target && !s.exited {
			s.progress.Wait()
		}
	}
}

func (s *Sink) run() {
	defer close(s.done)
	defer func() {
		s.mu.Lock()
		s.exited = true
		s.mu.Unlock()
		s.progress.Broadcast()
	}()
	var batch []broker.Finished
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.closed {
			s.cond.Wait()
		}
		batch, s.queue = s.queue, batch[:0]
		closed := s.closed
		s.mu.Unlock()
		for _, f := range batch {
			s.write(f)
		}
		if len(batch) > 0 {
			s.mu.Lock()
			s.written += uint64(len(batch))
			s.mu.Unlock()
			s.progress.Broadcast()
		}
		clear(batch)
		if closed && len(batch) == 0 {
			return
		}
	}
}

func (s *Sink) write(f broker.Finished) {
	// The common case (a page record, nothing kept) reads only the
	// record's head and writes the worker's line as is; a whole Record
	// (which escapes to the heap) is built only when needed.
	if !f.Failed && len(f.Output) > 0 && !s.keep {
		head, err := crawl.ReadRecordHead(f.Output)
		if err == nil && bytes.IndexByte(f.Output, '\n') < 0 {
			s.count(head.Outcome, head.Disallowed, head.Refused, head.Status)
			if s.w != nil && s.err == nil {
				if err := s.w.WriteLine(f.Output); err != nil {
					s.err = fmt.Errorf("writing results: %w", err)
				}
			}
			return
		}
	}
	s.writeRecord(f)
}

// count counts one record for the summary.
func (s *Sink) count(outcome crawl.Outcome, disallowed, refused bool, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case outcome == "failed":
		s.failed++
	case disallowed:
		s.disallowed++
	case refused:
		s.refused++
	default:
		s.pages++
		s.statuses[status]++
	}
}

// writeRecord counts, keeps (for the demo's check) and writes f's record:
// a failure, a record to keep, or one that needs re-encoding.
func (s *Sink) writeRecord(f broker.Finished) {
	var rec crawl.Record
	switch {
	case f.Failed || len(f.Output) == 0:
		rec = crawl.Record{URL: f.Key.URL, Outcome: "failed", Error: f.Error}
	default:
		if err := json.Unmarshal(f.Output, &rec); err != nil {
			rec = crawl.Record{URL: f.Key.URL, Outcome: "failed", Error: fmt.Sprintf("undecodable page record: %v", err)}
		}
	}
	s.count(rec.Outcome, rec.Disallowed, rec.Refused, rec.Status)
	if s.keep {
		s.mu.Lock()
		if j, seen := s.jobOf[rec.URL]; seen && j != uint64(f.Job) {
			s.dups = append(s.dups, rec.URL)
		}
		s.jobOf[rec.URL] = uint64(f.Job)
		s.records[rec.URL] = rec
		s.mu.Unlock()
	}
	if s.w != nil && s.err == nil {
		if err := s.w.Write(rec); err != nil {
			s.err = fmt.Errorf("writing results: %w", err)
		}
	}
}

// Close writes what is queued and stops the writer.
func (s *Sink) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cond.Signal()
	<-s.done
	if s.w != nil {
		if err := s.w.Close(); err != nil && s.err == nil {
			s.err = err
		}
	}
	return s.err
}

// Refused returns how many pages the private-address guard refused.
func (s *Sink) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Counts returns pages fetched, disallowed and failed so far.
func (s *Sink) Counts() (pages, disallowed, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pages, s.disallowed, s.failed
}

// Summary prints the crawl's closing report.
func (s *Sink) Summary(w io.Writer, t admin.Totals, elapsed time.Duration, completed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keep { // count each page once, by its last record (a requeue adds one)
		s.pages, s.disallowed, s.refused, s.failed, s.statuses = 0, 0, 0, 0, map[int]int{}
		for _, rec := range s.records {
			switch {
			case rec.Outcome == "failed":
				s.failed++
			case rec.Disallowed:
				s.disallowed++
			case rec.Refused:
				s.refused++
			default:
				s.pages++
				s.statuses[rec.Status]++
			}
		}
	}
	codes := slices.Sorted(maps.Keys(s.statuses))
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", s.statuses[c], c))
	}
	rate := float64(s.pages) / max(elapsed.Seconds(), 1e-3)
	retries := int64(t.Dispatches) - int64(t.Completions) - int64(t.Failed)
	how := "crawl finished in"
	if !completed {
		how = "crawl stopped before the frontier was empty, after"
	}
	fmt.Fprintf(w, "%s %s: %d pages fetched (%.1f pages/s), %d disallowed by robots.txt, %d failed\n",
		how, elapsed.Round(10*time.Millisecond), s.pages, rate, s.disallowed, s.failed)
	fmt.Fprintf(w, "  statuses:          %s\n", strings.Join(parts, ", "))
	if s.refused > 0 {
		fmt.Fprintf(w, "  refused:           %d on private addresses, not fetched from a public seed (--allow-private fetches them)\n", s.refused)
	}
	fmt.Fprintf(w, "  duplicates avoided: %d\n", t.DedupHits)
	fmt.Fprintf(w, "  retries:           %d (throttled %d times, %d internal failures)\n", max(retries, 0), t.Throttles, t.Failures)
}

// Records returns the latest record of each URL and the URLs two different
// jobs fetched (kept only when the sink was made with keep). Call it after
// Close.
func (s *Sink) Records() (map[string]crawl.Record, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records, s.dups
}
