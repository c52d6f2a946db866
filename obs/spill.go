package obs

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"drover/admin"
)

// spill holds the notifier's reports beyond its queue, oldest first: in a
// file of JSON lines (NotifierOptions.SpillPath), or in memory without
// one. The notifier's mutex guards it.
type spill struct {
	n int // reports waiting

	mem  []admin.Event // without a file
	head int

	f          *os.File
	roff, woff int64 // the oldest waiting line; the end of the last
	next       admin.Event
	nextLen    int64
	have       bool // next holds the line at roff
}

// open opens (or creates) the spill file and counts the reports a previous
// run left in it. A last line cut short (a crash while writing it) is
// removed.
func (s *spill) open(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	r := bufio.NewReader(f)
	var off int64
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // an unterminated tail (len(line) > 0) is cut off below
		}
		if err != nil {
			f.Close()
			return fmt.Errorf("read %s: %w", path, err)
		}
		off += int64(len(line))
		s.n++
	}
	if err := f.Truncate(off); err != nil {
		f.Close()
		return fmt.Errorf("truncate %s to its last whole line: %w", path, err)
	}
	s.f, s.woff = f, off
	return nil
}

// push appends ev.
func (s *spill) push(ev admin.Event) error {
	if s.f == nil {
		s.mem = append(s.mem, ev)
		s.n++
		return nil
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode report %d: %w", ev.Seq, err)
	}
	b = append(b, '\n')
	if _, err := s.f.WriteAt(b, s.woff); err != nil {
		return fmt.Errorf("write %s: %w", s.f.Name(), err)
	}
	s.woff += int64(len(b))
	s.n++
	return nil
}

// peek returns the oldest report, false when none waits. Lines that do not
// decode are skipped (and reported in err).
func (s *spill) peek() (admin.Event, bool, error) {
	if s.n == 0 {
		return admin.Event{}, false, nil
	}
	if s.f == nil {
		return s.mem[s.head], true, nil
	}
	var errs []error
	for !s.have && s.n > 0 {
		r := bufio.NewReader(io.NewSectionReader(s.f, s.roff, s.woff-s.roff))
		line, err := r.ReadBytes('\n')
		if err != nil {
			// The file changed under us: abandon what it holds.
			errs = append(errs, fmt.Errorf("read %s at %d: %w", s.f.Name(), s.roff, err))
			s.reset()
			break
		}
		if err := json.Unmarshal(line, &s.next); err != nil {
			errs = append(errs, fmt.Errorf("%s at %d: a line that is no report, skipped: %w", s.f.Name(), s.roff, err))
			s.roff += int64(len(line))
			s.n--
			continue
		}
		s.nextLen, s.have = int64(len(line)), true
	}
	if !s.have {
		s.reset()
		return admin.Event{}, false, errors.Join(errs...)
	}
	return s.next, true, errors.Join(errs...)
}

// pop removes the report peek returned.
func (s *spill) pop() {
	if s.n == 0 {
		return
	}
	s.n--
	if s.f == nil {
		s.mem[s.head] = admin.Event{}
		s.head++
		if s.n == 0 {
			s.mem, s.head = s.mem[:0], 0
		}
		return
	}
	s.roff += s.nextLen
	s.have = false
	if s.n == 0 {
		s.reset()
	}
}

// reset empties the spill (the file is truncated).
func (s *spill) reset() {
	s.n, s.have = 0, false
	s.mem, s.head = s.mem[:0], 0
	if s.f != nil {
		s.roff, s.woff = 0, 0
		_ = s.f.Truncate(0)
	}
}

// close closes the file, keeping in it, in this order, front and what
// waits in the spill, for the next run; a memory spill is emptied.
func (s *spill) close(front []admin.Event) error {
	if s.f == nil {
		s.reset()
		return nil
	}
	f := s.f
	s.f = nil
	var buf []byte
	for _, ev := range front {
		b, err := json.Marshal(ev)
		if err != nil {
			continue // admin.Event holds only plain fields
		}
		buf = append(append(buf, b...), '\n')
	}
	if s.n > 0 {
		rest := make([]byte, s.woff-s.roff)
		if _, err := f.ReadAt(rest, s.roff); err != nil {
			f.Close()
			return fmt.Errorf("keep what waits in %s: %w", f.Name(), err)
		}
		buf = append(buf, rest...)
	}
	if _, err := f.WriteAt(buf, 0); err != nil {
		f.Close()
		return fmt.Errorf("keep what waits in %s: %w", f.Name(), err)
	}
	if err := f.Truncate(int64(len(buf))); err != nil {
		f.Close()
		return fmt.Errorf("keep what waits in %s: %w", f.Name(), err)
	}
	return f.Close()
}
