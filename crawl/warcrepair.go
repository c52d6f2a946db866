package crawl

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// repairOpenWARCs finishes the files of name in dir that a process
// stopped while writing (still named *.warc.gz.open): each is cut after
// its last whole gzip member (a record, since each record is one) and
// given its final name, so that a resumed crawl leaves only valid files.
// It returns the repaired files' names.
func repairOpenWARCs(dir, name string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("WARC directory: %w", err)
	}
	re := warcName(name)
	var done []string
	for _, e := range entries {
		m := re.FindStringSubmatch(e.Name())
		if m == nil || m[2] == "" {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := cutToWholeMembers(path); err != nil {
			return done, fmt.Errorf("repairing %s: %w", path, err)
		}
		final := strings.TrimSuffix(path, ".open")
		if err := os.Rename(path, final); err != nil {
			return done, fmt.Errorf("repairing %s: %w", path, err)
		}
		done = append(done, filepath.Base(final))
	}
	return done, nil
}

// cutToWholeMembers truncates a gzip file after its last member that
// decompresses whole.
func cutToWholeMembers(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	// gzip reads no further than a member's end from an io.ByteReader,
	// so the count after each member is where the next one starts.
	cr := NewByteCounter(f)
	var good int64
	zr := new(gzip.Reader)
	for {
		if err := zr.Reset(cr); err != nil {
			break // the end, or a member cut in its header
		}
		zr.Multistream(false)
		if _, err := io.Copy(io.Discard, zr); err != nil {
			break // a member cut short or damaged
		}
		good = cr.N
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == good {
		return nil
	}
	return errors.Join(f.Truncate(good), f.Sync())
}

// ByteCounter reads through a buffer, counting the bytes it hands out in
// N. It is an io.ByteReader, so gzip and flate read no further than the
// member they decode: N is then where the member ends.
type ByteCounter struct {
	r *bufio.Reader
	N int64
}

// NewByteCounter counts what is read from r.
func NewByteCounter(r io.Reader) *ByteCounter { return &ByteCounter{r: bufio.NewReader(r)} }

// Read reads from the buffer, counting.
func (c *ByteCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.N += int64(n)
	return n, err
}

// ReadByte reads one byte from the buffer, counting.
func (c *ByteCounter) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.N++
	}
	return b, err
}
