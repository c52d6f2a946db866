package crawl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// JSONLWriter writes records as JSON Lines: one object per line, each
// written with a single Write call and flushed at once, so that a crash of
// the process leaves a file whose every complete line parses. It is safe
// for concurrent use. After a failed or short write it refuses further
// records (the file's last line may be incomplete; OpenJSONL repairs that
// on the next open).
type JSONLWriter struct {
	mu   sync.Mutex
	w    io.Writer
	file *os.File // set by OpenJSONL
	buf  bytes.Buffer
	line []byte
	err  error // sticky: the first write error
}

// NewJSONLWriter writes records to w. If w has a Flush() error method (a
// *bufio.Writer) it is called after every record.
func NewJSONLWriter(w io.Writer) *JSONLWriter {
	return &JSONLWriter{w: w} // records as Record.AppendJSON makes them
}

// OpenJSONL opens (creating it if needed) the JSONL file at path for
// appending. If a previous run crashed in the middle of a line, that
// incomplete last line is cut off first, so the file stays valid.
func OpenJSONL(path string) (*JSONLWriter, error) {
	f, err := openResultsFile(path)
	if err != nil {
		return nil, err
	}
	j := NewJSONLWriter(f)
	j.file = f
	return j, nil
}

// openResultsFile opens (creating it if needed) the results file at path
// for appending, an incomplete last line a crash left cut off.
func openResultsFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening results file: %w", err)
	}
	if err := cutPartialLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("repairing results file %s: %w", path, err)
	}
	return f, nil
}

// cutPartialLine truncates f after its last newline when it does not end
// with one.
func cutPartialLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size == 0 {
		return nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			return f.Truncate(start + int64(i) + 1)
		}
		end = start
	}
	return f.Truncate(0)
}

// Write appends one record as a line.
func (j *JSONLWriter) Write(rec Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return fmt.Errorf("results writer failed earlier: %w", j.err)
	}
	j.line = append(rec.AppendJSON(j.line[:0]), '\n')
	j.buf.Reset()
	j.buf.Write(j.line)
	return j.flush("record for " + rec.URL)
}

// flush writes the buffered line (j.mu held).
func (j *JSONLWriter) flush(what string) error {
	n, err := j.w.Write(j.buf.Bytes())
	if err == nil && n < j.buf.Len() {
		err = io.ErrShortWrite
	}
	if err == nil {
		if fl, ok := j.w.(interface{ Flush() error }); ok {
			err = fl.Flush()
		}
	}
	if err != nil {
		j.err = err
		return fmt.Errorf("writing %s: %w", what, err)
	}
	return nil
}

// WriteLine appends one record already encoded as a JSON object on one
// line (no newline in it; WriteLine adds the one that ends it).
func (j *JSONLWriter) WriteLine(line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 || !json.Valid(line) {
		return fmt.Errorf("JSONL record %.40q: want one JSON value on one line", line)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return fmt.Errorf("results writer failed earlier: %w", j.err)
	}
	j.buf.Reset()
	j.buf.Write(line)
	j.buf.WriteByte('\n')
	return j.flush("record")
}

// Close syncs and closes the file opened by OpenJSONL; for a writer made
// by NewJSONLWriter it only stops further writes (the caller owns w).
func (j *JSONLWriter) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = errClosed
	}
	if j.file == nil {
		return nil
	}
	f := j.file
	j.file = nil
	return errors.Join(f.Sync(), f.Close())
}

var errClosed = errors.New("closed")
