package coord

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"drover/coord/id"
	"drover/coord/ledger"
)

// grantKeys returns n raw keys, some of them not in normal form (upper
// case host, default port), so that a fingerprint of the raw key would be
// wrong.
func grantKeys(prefix string, n int) []id.Key {
	ks := make([]id.Key, n)
	for i := range ks {
		url := fmt.Sprintf("http://%s.test/%d", prefix, i)
		if i%3 == 0 {
			url = fmt.Sprintf("HTTP://%s.TEST:80/%d", prefix, i)
		}
		ks[i] = id.Key{Crawler: "c", Processor: "p", URL: url}
	}
	return ks
}

func wantFP(t *testing.T, k id.Key) id.Fingerprint {
	t.Helper()
	nk, err := id.NewKey(k.Crawler, k.Processor, k.URL)
	if err != nil {
		t.Fatal(err)
	}
	return nk.Fingerprint()
}

// TestQueueGrantedKeys: a QUEUE of the keys the session's last REQUEST
// granted, all, some, out of order, repeated or mixed with others and a
// bad key, answers as if each key were normalised afresh; the memo is
// found for them, and is gone once the session ends.
func TestQueueGrantedKeys(t *testing.T) {
	c := newCoord(t, Config{})
	hello(t, c, 1, Hello{Role: RoleProducer, ID: "p"})
	hello(t, c, 2, Hello{Role: RoleProducer, ID: "q"})
	ks := grantKeys("a", 300)
	if _, err := c.Request(t0, 2, 1, ks[200:], nil); err != nil { // held by another session
		t.Fatal(err)
	}
	vs, err := c.Request(t0, 1, 2, ks, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := c.grants.of(1); m == nil || len(m.keys) != 200 {
		t.Fatalf("memo of session 1: %+v, want the 200 granted keys", m)
	}
	for i, v := range vs[:200] {
		if v.Verdict != ledger.OK || v.Reason != ledger.ReasonNone {
			t.Fatalf("key %d: %+v, want ok", i, v)
		}
	}
	// Out of order, skipping, repeating, with a key held by session 2, one
	// never requested and one that does not normalise.
	q := []id.Key{ks[5], ks[0], ks[1], ks[1], ks[3], ks[250], {Crawler: "c", Processor: "p", URL: "http://b.test/x"},
		{Crawler: "c", Processor: "p", URL: "ftp://x"}, ks[199]}
	q = append(q, ks[10:150]...)
	got, err := c.Queue(t0, 1, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	// ks[5] and ks[10:150] are found in the memo, the last at 149.
	if m := c.grants.of(1); m == nil || m.at != 150 {
		t.Fatalf("memo of session 1 after the QUEUE: %+v, want it consulted up to key 149", m)
	}
	if len(got) != len(q) {
		t.Fatalf("%d verdicts for %d keys", len(got), len(q))
	}
	want := map[int]ledger.Reason{3: ledger.ReasonWrongState, 5: ledger.ReasonNotOwner, 6: ledger.ReasonUnknown, 7: ReasonBadKey}
	for i, v := range got {
		r, bad := want[i]
		switch {
		case bad && (v.Verdict != ledger.Error || v.Reason != r):
			t.Errorf("key %d (%s): %+v, want error %s", i, q[i].URL, v, r)
		case !bad && (v.Verdict != ledger.OK || v.Reason != ledger.ReasonNone):
			t.Errorf("key %d (%s): %+v, want ok", i, q[i].URL, v)
		}
		if i != 7 && v.FP != wantFP(t, q[i]) {
			t.Errorf("key %d (%s): fingerprint %v, want %v", i, q[i].URL, v.FP, wantFP(t, q[i]))
		}
	}
	if n := c.led.Counts().Queued; n != len(q)-4 {
		t.Errorf("%d keys queued, want %d", n, len(q)-4)
	}
	c.Disconnect(t0, 1)
	if c.grants.of(1) != nil {
		t.Error("session 1 ended, its memo is still kept")
	}
}

// TestGrantMemoFind: the memo finds granted keys in order and a little
// ahead, not a key it does not hold, and keeps at most maxGrants keys.
func TestGrantMemoFind(t *testing.T) {
	var g grants
	m := g.start(7)
	ks := grantKeys("a", maxGrants+10)
	for i, k := range ks {
		m.add(k, id.Fingerprint{byte(i), byte(i >> 8)})
	}
	if len(m.keys) != maxGrants {
		t.Fatalf("memo holds %d keys, want at most %d", len(m.keys), maxGrants)
	}
	for _, i := range []int{0, 1, 2, lookAhead + 2, 3} {
		fp, ok := m.find(&ks[i])
		if i == 3 { // behind the place the last find left
			if ok {
				t.Errorf("key 3 found after key %d", lookAhead+2)
			}
			continue
		}
		if !ok || fp != (id.Fingerprint{byte(i), byte(i >> 8)}) {
			t.Errorf("key %d: %v %v", i, fp, ok)
		}
	}
	if _, ok := m.find(&ks[maxGrants+1]); ok {
		t.Error("a key past maxGrants found")
	}
	// A fifth session takes the oldest slot.
	for s := id.Session(8); s < 8+maxGrantMemos; s++ {
		g.start(s)
	}
	if g.of(7) != nil {
		t.Error("session 7's memo kept after maxGrantMemos later sessions")
	}
}

// TestGrantsFreeSlot: a session takes a slot another one freed, not the
// round robin's, whose memo stays.
func TestGrantsFreeSlot(t *testing.T) {
	var g grants
	for s := id.Session(1); s <= maxGrantMemos; s++ {
		g.start(s)
	}
	g.drop(3)
	g.start(9)
	for _, s := range []id.Session{1, 2, 4, 9} {
		if g.of(s) == nil {
			t.Errorf("session %d has no memo after session 3 ended and session 9 started", s)
		}
	}
}

// TestGrantMemoOwnsItsKeys: the memo keeps copies of the keys' bytes, not
// the message's strings (which would keep a whole message alive): it finds
// the keys after the message's bytes are overwritten.
func TestGrantMemoOwnsItsKeys(t *testing.T) {
	var g grants
	m := g.start(1)
	msg := []byte("cpu1u2")
	k1 := id.Key{Crawler: unsafe.String(&msg[0], 1), Processor: unsafe.String(&msg[1], 1), URL: unsafe.String(&msg[2], 2)}
	k2 := id.Key{Crawler: k1.Crawler, Processor: k1.Processor, URL: unsafe.String(&msg[4], 2)}
	m.add(k1, id.Fingerprint{1})
	m.add(k2, id.Fingerprint{2})
	copy(msg, "xxxxxx") // the next message read into the same buffer
	for i, k := range []id.Key{{Crawler: "c", Processor: "p", URL: "u1"}, {Crawler: "c", Processor: "p", URL: "u2"}} {
		if fp, ok := m.find(&k); !ok || fp != (id.Fingerprint{byte(i + 1)}) {
			t.Errorf("key %+v: %v %v, want found with fingerprint %d", k, fp, ok, i+1)
		}
	}
	if m.raw == nil || len(m.raw) > maxGrantBytes {
		t.Errorf("memo holds %d bytes", len(m.raw))
	}
}

// TestGrantMemoBytesBound: keys past maxGrantBytes are not kept (they are
// worked out again).
func TestGrantMemoBytesBound(t *testing.T) {
	var g grants
	m := g.start(1)
	long := strings.Repeat("x", maxGrantBytes/2)
	for i := range 3 {
		m.add(id.Key{Crawler: "c", Processor: "p", URL: long + string(rune('a'+i))}, id.Fingerprint{})
	}
	if len(m.keys) != 1 || len(m.raw) > maxGrantBytes {
		t.Errorf("memo holds %d keys in %d bytes, want 1 within %d", len(m.keys), len(m.raw), maxGrantBytes)
	}
}
