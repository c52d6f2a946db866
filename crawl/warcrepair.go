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
	cr := &countingByteReader{r: bufio.NewReader(f)}
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
		good = cr.n
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

// countingByteReader counts what is read through it.
type countingByteReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingByteReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingByteReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}
