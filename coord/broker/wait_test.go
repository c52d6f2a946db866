package broker

import "testing"

// Every wait reason has words of its own, and its text starts with them.
func TestWaitText(t *testing.T) {
	seen := map[string]Wait{}
	for w := WaitUnroutable; w <= WaitReclaim; w++ {
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
		{Wait(200), "x", "unknown"},
	} {
		if got := tc.w.text(tc.detail); got != tc.want {
			t.Errorf("%v.text(%q) = %q; want %q", tc.w, tc.detail, got, tc.want)
		}
	}
}
