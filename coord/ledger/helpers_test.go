package ledger

import (
	"testing"
	"time"

	"drover/coord/id"
)

// base is the start of every test clock.
var base = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// key is the test key named label.
func key(label string) id.Key {
	return id.Key{Crawler: "c", Processor: "p", URL: "http://example.com/" + label}
}

// fpOf is the fingerprint of the test key named label.
func fpOf(label string) id.Fingerprint { return key(label).Fingerprint() }

// harness drives a ledger with a test clock and checks its invariants after
// every call.
type harness struct {
	t   testing.TB
	l   *Ledger
	now time.Time
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return &harness{t: t, l: l, now: base}
}

func (h *harness) checked() {
	h.t.Helper()
	if err := h.l.check(); err != nil {
		h.t.Fatalf("invariant broken: %v", err)
	}
}

func (h *harness) advance(d time.Duration) { h.now = h.now.Add(d) }

func (h *harness) request(s id.Session, reqID uint64, label string) (Verdict, Reason) {
	h.t.Helper()
	defer h.checked()
	return h.l.Request(h.now, s, reqID, key(label), fpOf(label))
}

func (h *harness) queue(s id.Session, label string) (Verdict, Reason) {
	h.t.Helper()
	defer h.checked()
	return h.l.Queue(h.now, s, fpOf(label))
}

func (h *harness) done(label string, o Outcome) {
	h.t.Helper()
	defer h.checked()
	h.l.Done(h.now, key(label), fpOf(label), o)
}

func (h *harness) release(s id.Session) {
	h.t.Helper()
	defer h.checked()
	h.l.Release(h.now, s)
}

func (h *harness) tick() {
	h.t.Helper()
	defer h.checked()
	h.l.Tick(h.now)
}

func (h *harness) answers() []Answer { return h.l.TakeAnswers(nil) }

// mustVerdict fails the test unless (v, r) is (wantV, wantR).
func mustVerdict(t testing.TB, what string, v Verdict, r Reason, wantV Verdict, wantR Reason) {
	t.Helper()
	if v != wantV || r != wantR {
		t.Fatalf("%s = %v %q, want %v %q", what, v, r, wantV, wantR)
	}
}
