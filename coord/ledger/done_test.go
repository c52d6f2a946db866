package ledger

import (
	"testing"
	"time"

	"drover/coord/id"
)

func TestStamp(t *testing.T) {
	epoch := time.Unix(0, stampEpoch)
	tests := []struct {
		name    string
		at      time.Time
		o       Outcome
		want    time.Time
		wantOut Outcome
	}{
		{"on a second", base, DoneOK, base, DoneOK},
		{"rounded up", base.Add(time.Nanosecond), DoneFailed, base.Add(time.Second), DoneFailed},
		{"just below a second", base.Add(time.Second - 1), DoneOK, base.Add(time.Second), DoneOK},
		{"the epoch", epoch, DoneOK, epoch, DoneOK},
		{"before the epoch clamps", epoch.Add(-time.Hour), DoneFailed, epoch, DoneFailed},
		{"far future clamps", epoch.Add(100 * 365 * 24 * time.Hour), DoneOK, epoch.Add((1<<31 - 1) * time.Second), DoneOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := makeStamp(tt.at.UnixNano(), tt.o)
			if got := time.Unix(0, stampNanos(v)); !got.Equal(tt.want) || stampOutcome(v) != tt.wantOut {
				t.Fatalf("stamp of %v, %v = %v, %v; want %v, %v", tt.at, tt.o, got.UTC(), stampOutcome(v), tt.want.UTC(), tt.wantOut)
			}
		})
	}
}

func TestDoneFIFO(t *testing.T) {
	// Against a slice, across chunk boundaries, emptying and refilling.
	var q doneFIFO
	var model []uint32
	next := uint32(0)
	steps := []struct{ push, pop int }{
		{10, 3}, {fifoChunk, fifoChunk}, {3 * fifoChunk, 7}, {1, 3*fifoChunk + 1}, {fifoChunk + 5, 0}, {0, fifoChunk + 5}, {2, 1},
	}
	for si, st := range steps {
		for i := 0; i < st.push; i++ {
			q.push(doneEntry{v: next})
			model = append(model, next)
			next++
		}
		for i := 0; i < st.pop; i++ {
			if q.front().v != model[0] {
				t.Fatalf("step %d: front %d, want %d", si, q.front().v, model[0])
			}
			q.pop()
			model = model[1:]
		}
		if q.n != len(model) {
			t.Fatalf("step %d: n = %d, want %d", si, q.n, len(model))
		}
		for i, want := range model {
			if got := q.at(i).v; got != want {
				t.Fatalf("step %d: at(%d) = %d, want %d", si, i, got, want)
			}
		}
		if len(q.chunks) > len(model)/fifoChunk+2 {
			t.Fatalf("step %d: %d chunks for %d entries; want at most %d", si, len(q.chunks), len(model), len(model)/fifoChunk+2)
		}
	}
}

func TestDoneSetTruncatedKey(t *testing.T) {
	// Two fingerprints that differ only past the 96 bits kept share a record
	// (the documented, negligible risk); ones that differ within them do not.
	var d doneSet
	d.init(0, 0, 0)
	var a, b, c id.Fingerprint
	b[15], c[11] = 1, 1
	d.put(a, base.UnixNano(), DoneOK, 0)
	if _, ok := d.get(b, base.UnixNano()); !ok {
		t.Fatal("fingerprints equal in their first 96 bits do not share a done record")
	}
	if _, ok := d.get(c, base.UnixNano()); ok {
		t.Fatal("fingerprints differing in their first 96 bits share a done record")
	}
}

// TestDoneSetMemoryAtOneMillion measures what the issue asks: at most 64
// bytes per done key at 1M keys, with a TTL (the costlier case: the sweep
// FIFO) and without.
func TestDoneSetMemoryAtOneMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 100 MB")
	}
	for _, cfg := range []Config{{}, {DoneTTL: 24 * time.Hour, FailedTTL: time.Hour}} {
		perKey := doneSetBytesPerKey(t, 1_000_000, cfg)
		t.Logf("done TTL %v: %.1f B/key", cfg.DoneTTL, perKey)
		if perKey > 64 {
			t.Errorf("done set with TTL %v costs %.1f B/key at 1M keys; want at most 64", cfg.DoneTTL, perKey)
		}
	}
}
