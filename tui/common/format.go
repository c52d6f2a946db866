package common

import (
	"strconv"
	"strings"
	"time"
)

// stateSymbols gives every state a symbol shown before its word, so state
// reads without colour.
var stateSymbols = map[string]string{
	// jobs and keys
	"requested":  "◌",
	"queued":     "○",
	"dispatched": "▶",
	"backoff":    "↻",
	"done":       "✓",
	"failed":     "✗",
	"claimed":    "⇢", // another coordinator on the cluster holds it
	// workers
	"idle":     "○",
	"busy":     "●",
	"draining": "◐",
	"held":     "◔",
	"lost":     "✗",
}

// StateLabel renders a state as symbol and word ("✗ failed"); an unknown
// state is shown as its word.
func StateLabel(state string) string {
	if sym, ok := stateSymbols[state]; ok {
		return sym + " " + state
	}
	if state == "" {
		return "-"
	}
	return state
}

// Duration renders a duration compactly: 12s, 3m05s, 2h05m, 3d04h. Negative
// durations render as their absolute value.
func Duration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return strconv.FormatInt(s/60, 10) + "m" + pad2(s%60) + "s"
	case s < 86400:
		return strconv.FormatInt(s/3600, 10) + "h" + pad2(s%3600/60) + "m"
	default:
		return strconv.FormatInt(s/86400, 10) + "d" + pad2(s%86400/3600) + "h"
	}
}

func pad2(n int64) string {
	if n < 10 {
		return "0" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

// Since renders how long ago t was ("12s"), or "-" for the zero time.
func Since(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if t.After(now) {
		return "0s"
	}
	return Duration(now.Sub(t))
}

// Until renders when t comes ("in 12s", "now" once passed), or "-" for the
// zero time.
func Until(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if !t.After(now) {
		return "now"
	}
	return "in " + Duration(t.Sub(now))
}

// Grouped renders an integer with thousands separators: 1,234,567.
func Grouped(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	lead := len(s) % 3
	if lead == 0 {
		lead = 3
	}
	b.WriteString(s[:lead])
	for i := lead; i < len(s); i += 3 {
		b.WriteByte(',')
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// Compact renders a count in at most five cells: 999, 12.3k, 1.23M, 4.5G.
func Compact(n uint64) string {
	switch {
	case n < 10_000:
		return strconv.FormatUint(n, 10)
	case n < 1_000_000:
		return trimZero(strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64)) + "k"
	case n < 1_000_000_000:
		return trimZero(strconv.FormatFloat(float64(n)/1e6, 'f', 2, 64)) + "M"
	default:
		return trimZero(strconv.FormatFloat(float64(n)/1e9, 'f', 2, 64)) + "G"
	}
}

func trimZero(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return s
}

// Rate renders a per-second rate: 0/s, 12.5/s, 3.4k/s.
func Rate(perSec float64) string {
	switch {
	case perSec < 0:
		return "0/s"
	case perSec < 100:
		return trimZero(strconv.FormatFloat(perSec, 'f', 1, 64)) + "/s"
	default:
		return Compact(uint64(perSec+0.5)) + "/s"
	}
}

// sparkBlocks are the eight heights of a sparkline cell.
var sparkBlocks = []rune("▁▂▃▄▅▆▇█")

// Sparkline renders the last width values as block characters scaled to
// the largest of them; all-zero values render as the lowest block.
func Sparkline(values []float64, width int) string {
	if width <= 0 || len(values) == 0 {
		return ""
	}
	if len(values) > width {
		values = values[len(values)-width:]
	}
	top := 0.0
	for _, v := range values {
		top = max(top, v)
	}
	out := make([]rune, len(values))
	for i, v := range values {
		idx := 0
		if top > 0 && v > 0 {
			idx = int(v / top * float64(len(sparkBlocks)-1))
			idx = min(max(idx, 0), len(sparkBlocks)-1)
		}
		out[i] = sparkBlocks[idx]
	}
	return string(out)
}

// Sanitize replaces control characters, escape included, with spaces: text
// from the coordinator (a URL, an error message) stays on one line and
// cannot send sequences to the operator's terminal.
func Sanitize(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		// C0 controls and DEL, and C1 controls (U+0080-U+009F, 0xC2 0x80-0x9F in UTF-8).
		if s[i] < 0x20 || s[i] == 0x7f || (s[i] == 0xc2 && i+1 < len(s) && s[i+1] < 0xa0) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
}
