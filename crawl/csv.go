package crawl

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// RecordWriter is where a crawl's page records go: a JSONLWriter or a
// CSVWriter.
type RecordWriter interface {
	// Write appends one record.
	Write(rec Record) error
	// WriteLine appends one record given as its JSON object on one line
	// (as Record.AppendJSON makes it).
	WriteLine(line []byte) error
	// Close flushes, syncs and closes the file.
	Close() error
}

// CSVColumns are the columns of the CSV results file, in order: the JSON
// record's fields (see Record) but the warc_ ones under the same names, booleans as true or
// false, fetched_at in RFC 3339 with nanoseconds.
var CSVColumns = []string{"url", "final_url", "status", "content_type", "title", "depth", "parent", "links_out",
	"bytes", "fetch_ms", "worker", "attempt", "fetched_at", "outcome", "disallowed", "refused", "canonical",
	"noindex", "nofollow", "error"}

// CSVWriter writes records as CSV (RFC 4180): a header row of CSVColumns,
// then one row per record, each written with one Write call and flushed.
// It is safe for concurrent use.
type CSVWriter struct {
	mu   sync.Mutex
	file *os.File
	buf  bytes.Buffer
	cw   *csv.Writer
	err  error
}

// OpenCSV opens (creating it if needed) the CSV file at path for
// appending; a new or empty file gets the header row first. An incomplete
// last row a crash left is cut off first. A file whose header is not
// CSVColumns is refused rather than mixed.
func OpenCSV(path string) (*CSVWriter, error) {
	f, err := openResultsFile(path)
	if err != nil {
		return nil, err
	}
	c := &CSVWriter{file: f}
	c.cw = csv.NewWriter(&c.buf)
	header := make([]byte, 4096)
	n, _ := f.ReadAt(header, 0)
	switch first, _, _ := bytes.Cut(header[:n], []byte("\n")); {
	case n == 0:
		if err := c.row(CSVColumns); err != nil {
			f.Close()
			return nil, err
		}
	case string(bytes.TrimSuffix(first, []byte("\r"))) != joinColumns():
		f.Close()
		return nil, fmt.Errorf("results file %s: its first row is not drover's CSV header %q; choose another file", path, joinColumns())
	}
	return c, nil
}

func joinColumns() string {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(CSVColumns)
	w.Flush()
	return string(bytes.TrimRight(b.Bytes(), "\n"))
}

// row writes one row (c.mu held or not yet shared).
func (c *CSVWriter) row(fields []string) error {
	if c.err != nil {
		return fmt.Errorf("results writer failed earlier: %w", c.err)
	}
	c.buf.Reset()
	if err := c.cw.Write(fields); err != nil {
		return err
	}
	c.cw.Flush()
	n, err := c.file.Write(c.buf.Bytes())
	if err == nil && n < c.buf.Len() {
		err = fmt.Errorf("short write of %d of %d bytes", n, c.buf.Len())
	}
	if err != nil {
		c.err = err
		return fmt.Errorf("writing CSV row: %w", err)
	}
	return nil
}

// Write appends one record as a row.
func (c *CSVWriter) Write(r Record) error {
	b := func(v bool) string { return strconv.FormatBool(v) }
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.row([]string{r.URL, r.FinalURL, strconv.Itoa(r.Status), r.ContentType, r.Title, strconv.Itoa(r.Depth),
		r.Parent, strconv.Itoa(r.LinksOut), strconv.FormatInt(r.Bytes, 10), strconv.FormatFloat(r.FetchMS, 'f', -1, 64),
		r.Worker, strconv.Itoa(r.Attempt), r.FetchedAt.Format(time.RFC3339Nano), string(r.Outcome), b(r.Disallowed),
		b(r.Refused), r.Canonical, b(r.NoIndex), b(r.NoFollow), r.Error})
}

// WriteLine appends the record a JSON line holds.
func (c *CSVWriter) WriteLine(line []byte) error {
	var r Record
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("record %.40q: %w", line, err)
	}
	return c.Write(r)
}

// Close syncs and closes the file.
func (c *CSVWriter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file == nil {
		return nil
	}
	f := c.file
	c.file, c.err = nil, errClosed
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
