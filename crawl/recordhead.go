package crawl

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// RecordHead is what a consumer of page records needs to count them.
type RecordHead struct {
	URL        string  `json:"url"`
	Status     int     `json:"status"`
	Outcome    Outcome `json:"outcome"`
	Disallowed bool    `json:"disallowed"`
	Refused    bool    `json:"refused"`
}

// ReadRecordHead reads the head of a page record (a JSON object). A flat
// object, as AppendJSON writes, is read by a small scanner that only looks
// at the five fields; anything else (nesting, odd values) goes through
// encoding/json, which also reports what is wrong with a bad record. The
// scanner checks the object's structure and strings' escapes, not the
// UTF-8 of the strings it skips.
func ReadRecordHead(b []byte) (RecordHead, error) {
	if h, ok := scanRecordHead(b); ok {
		return h, nil
	}
	var h RecordHead
	err := json.Unmarshal(b, &h)
	return h, err
}

var errNotFlat = errors.New("not a flat record")

// scanRecordHead is ReadRecordHead's fast path; ok is false when b is not
// a flat JSON object it can read.
func scanRecordHead(b []byte) (h RecordHead, ok bool) {
	s := headScanner{b: b}
	s.ws()
	if !s.eat('{') {
		return h, false
	}
	s.ws()
	if s.eat('}') {
		return h, s.end()
	}
	for {
		s.ws()
		key, esc, err := s.str()
		if err != nil || esc || foldsToHeadKey(key) {
			return h, false
		}
		s.ws()
		if !s.eat(':') {
			return h, false
		}
		s.ws()
		if err := s.value(string(key), &h); err != nil {
			return h, false
		}
		s.ws()
		if s.eat(',') {
			continue
		}
		if s.eat('}') {
			return h, s.end()
		}
		return h, false
	}
}

// foldsToHeadKey reports whether key is one of the head's keys in other
// letter case, which encoding/json would match (case-insensitively).
func foldsToHeadKey(key []byte) bool {
	for _, k := range []string{"url", "status", "outcome", "disallowed", "refused"} {
		if len(key) == len(k) && string(key) != k && strings.EqualFold(string(key), k) {
			return true
		}
	}
	return false
}

type headScanner struct {
	b []byte
	i int
}

func (s *headScanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *headScanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *headScanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// str reads a JSON string and returns its raw contents (between the
// quotes) and whether it has escapes.
func (s *headScanner) str() (raw []byte, escaped bool, err error) {
	if !s.eat('"') {
		return nil, false, errNotFlat
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				return nil, false, errNotFlat
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return nil, false, errNotFlat
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return nil, false, errNotFlat
					}
				}
				s.i += 6
			default:
				return nil, false, errNotFlat
			}
		case c < 0x20:
			return nil, false, errNotFlat
		default:
			s.i++
		}
	}
	return nil, false, errNotFlat
}

// value reads one value, keeping it in h when key is one of the head's.
func (s *headScanner) value(key string, h *RecordHead) error {
	if s.i >= len(s.b) {
		return errNotFlat
	}
	switch c := s.b[s.i]; {
	case c == '"':
		start := s.i
		raw, esc, err := s.str()
		if err != nil {
			return err
		}
		switch key {
		case "status", "disallowed", "refused":
			return errNotFlat // the wrong type: encoding/json says what is wrong
		case "url", "outcome":
		default:
			return nil
		}
		v := string(raw)
		if esc {
			if err := json.Unmarshal(s.b[start:s.i], &v); err != nil {
				return err
			}
		}
		if key == "url" {
			h.URL = v
		} else {
			h.Outcome = Outcome(v)
		}
		return nil
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				if key == "disallowed" || key == "refused" {
					if lit == "null" {
						return errNotFlat // encoding/json leaves the field as it was: let it decide
					}
					if key == "refused" {
						h.Refused = lit == "true"
					} else {
						h.Disallowed = lit == "true"
					}
				} else if key == "url" || key == "outcome" || key == "status" {
					return errNotFlat
				}
				return nil
			}
		}
		return errNotFlat
	case c == '-' || c >= '0' && c <= '9':
		start := s.i
		for s.i < len(s.b) && (s.b[s.i] == '-' || s.b[s.i] == '+' || s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E' || s.b[s.i] >= '0' && s.b[s.i] <= '9') {
			s.i++
		}
		switch key {
		case "status":
			num := s.b[start:s.i]
			digits := num
			if len(digits) > 0 && digits[0] == '-' {
				digits = digits[1:]
			}
			if len(digits) == 0 || len(digits) > 1 && digits[0] == '0' {
				return errNotFlat
			}
			for _, d := range digits {
				if d < '0' || d > '9' {
					return errNotFlat
				}
			}
			n, err := strconv.Atoi(string(num))
			if err != nil {
				return errNotFlat
			}
			h.Status = n
		case "url", "outcome", "disallowed", "refused":
			return errNotFlat
		}
		return nil
	}
	return errNotFlat
}
