package broker

import (
	"os"
	"slices"
	"strings"
	"testing"

	"drover/admin"
)

// Every wait reason has words of its own, and its text starts with them.
func TestWaitText(t *testing.T) {
	seen := map[string]Wait{}
	for w := WaitUnroutable; w < numWaits; w++ {
		s := w.String()
		if s == "" || s == "unknown" {
			t.Fatalf("Wait(%d).String() = %q; want its words", w, s)
		}
		if o, dup := seen[s]; dup {
			t.Fatalf("Wait(%d) and Wait(%d) both say %q", o, w, s)
		}
		seen[s] = w
	}
	for _, tc := range []struct {
		w      Wait
		detail string
		want   string
	}{
		{WaitUnroutable, "no live worker", "unroutable: no live worker"},
		{WaitPaused, "", "paused"},
		{WaitPolite, "next dispatch to a.test", "polite: next dispatch to a.test"},
		{WaitRetry, "after failure 1 of 3", "retry after failure 1 of 3"},
		{WaitHostBackoff, "until T", "host back-off until T"},
		{WaitReclaim, "by w-1", "awaiting reclaim by w-1"},
		{WaitPaged, "(store.resident_jobs)", "in the store only (store.resident_jobs)"},
		{Wait(200), "x", "unknown"},
	} {
		if got := tc.w.text(tc.detail); got != tc.want {
			t.Errorf("%v.text(%q) = %q; want %q", tc.w, tc.detail, got, tc.want)
		}
	}
}

// Every wait has a word on the wire of its own, the words are admin.Waits
// (all of them, in order), and docs/PROTOCOL.md lists the same words.
func TestWaitWire(t *testing.T) {
	var words []admin.Wait
	for w := WaitUnroutable; w < numWaits; w++ {
		words = append(words, w.Wire())
	}
	if WaitNone.Wire() != "" || Wait(200).Wire() != "" {
		t.Errorf("no wait on the wire: %q and %q, want empty", WaitNone.Wire(), Wait(200).Wire())
	}
	want := admin.Waits()
	slices.Sort(want)
	slices.Sort(words)
	if !slices.Equal(words, want) {
		t.Errorf("the broker's wire words %v, admin.Waits %v: want the same", words, want)
	}
	b, err := os.ReadFile("../../docs/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "<!-- waits -->\n")
	if i < 0 {
		t.Fatal("no <!-- waits --> table in docs/PROTOCOL.md")
	}
	var listed []admin.Wait
	for n, line := range strings.Split(doc[i+len("<!-- waits -->\n"):], "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if n >= 2 { // header and separator
			cell := strings.TrimSpace(strings.Split(strings.Trim(line, "|"), "|")[0])
			listed = append(listed, admin.Wait(strings.Trim(cell, "`")))
		}
	}
	if !slices.Equal(listed, admin.Waits()) {
		t.Errorf("docs/PROTOCOL.md lists the waits %v; admin.Waits is %v", listed, admin.Waits())
	}
}

// A wait= filter looks at the states its words allow only: paged jobs
// and unknown words are in none the broker holds.
func TestWaitStates(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  stateMask
	}{
		{[]string{"polite"}, 1 << Queued},
		{[]string{"unroutable", "retry"}, 1<<Queued | 1<<Backoff},
		{[]string{"host-backoff", "reclaim"}, 1<<Backoff | 1<<Dispatched},
		{[]string{"paged"}, 0},
		{[]string{"cats"}, 0},
	} {
		if got := waitStates(tc.words); got != tc.want {
			t.Errorf("waitStates(%v) = %b, want %b", tc.words, got, tc.want)
		}
	}
}
