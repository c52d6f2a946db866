package offheap

import (
	"math/rand/v2"
	"testing"
)

// testKeys is an index's owner for the tests: slot s names key s, whose
// hash is hashes[s].
type testKeys struct {
	x      Index[uint32]
	hashes []uint64
}

func newTestKeys() *testKeys {
	k := &testKeys{hashes: []uint64{0}}
	k.x.Init(New(k), func(s uint32) uint64 { return k.hashes[s] })
	return k
}

func (k *testKeys) match(s uint32) func(uint32) bool {
	return func(t uint32) bool { return t == s }
}

// TestIndexModel puts and deletes keys at random, many of them on few home
// positions (colliding hashes), against a map, through growths and
// shrinks, checking every key (present and absent) as it goes.
func TestIndexModel(t *testing.T) {
	for _, clustered := range []bool{false, true} {
		k := newTestKeys()
		rng := rand.New(rand.NewPCG(7, 8))
		live := map[uint32]bool{}
		var order []uint32
		grew, shrank := 0, 0
		steps := 60000
		if clustered {
			steps = 8000 // every probe walks most of the keys
		}
		for step := range steps {
			phase := step / (steps / 4) // grow, shrink, grow, shrink
			del := rng.IntN(10) < 3
			if phase%2 == 1 {
				del = rng.IntN(10) < 8
			}
			if del && len(order) > 0 {
				i := rng.IntN(len(order))
				s := order[i]
				order[i] = order[len(order)-1]
				order = order[:len(order)-1]
				if !k.x.Delete(k.hashes[s], k.match(s)) {
					t.Fatalf("step %d: delete of key %d found nothing", step, s)
				}
				delete(live, s)
			} else {
				h := rng.Uint64()
				if clustered {
					h = uint64(rng.IntN(8)) << 61 // eight home positions at most
				}
				k.hashes = append(k.hashes, h)
				s := uint32(len(k.hashes) - 1)
				before := k.x.Growing()
				k.x.Put(h, s)
				if !before && k.x.Growing() {
					if len(live) > len(order) {
						t.Fatal("model out of step")
					}
					grew++
				}
				live[s] = true
				order = append(order, s)
			}
			if !k.x.Growing() && k.x.Slots() < 4*len(live)/3 {
				t.Fatalf("step %d: %d slots for %d keys", step, k.x.Slots(), len(live))
			}
			if phase%2 == 1 && k.x.Growing() {
				shrank++
			}
			if k.x.Len() != len(live) {
				t.Fatalf("step %d: %d entries, want %d", step, k.x.Len(), len(live))
			}
			if step%251 == 0 || step == steps-1 {
				if err := k.x.Check(func(uint32) error { return nil }); err != nil {
					t.Fatalf("step %d (clustered %v): %v", step, clustered, err)
				}
				for s := uint32(1); s < uint32(len(k.hashes)); s++ {
					got := k.x.Get(k.hashes[s], k.match(s))
					if live[s] && got != s || !live[s] && got != 0 {
						t.Fatalf("step %d (clustered %v): get of key %d (live %v) = %d", step, clustered, s, live[s], got)
					}
				}
			}
		}
		if grew < 3 || shrank == 0 {
			t.Fatalf("clustered %v: %d growths, shrinking seen %d times: the test did not exercise moves", clustered, grew, shrank)
		}
	}
}

// TestIndexGrowsInSteps: growing to a million keys, no insert moves more
// than a bounded number of slots (a whole-table rehash would move the
// whole table in one), a growth spans many inserts, and every old table
// is given back once its move is over.
func TestIndexGrowsInSteps(t *testing.T) {
	const n = 1 << 20
	k := newTestKeys()
	rng := rand.New(rand.NewPCG(9, 10))
	maxMoved, growingPuts, growths := 0, 0, 0
	for i := range n {
		h := rng.Uint64()
		k.hashes = append(k.hashes, h)
		was := k.x.Growing()
		k.x.Put(h, uint32(i+1))
		maxMoved = max(maxMoved, k.x.Moved())
		if k.x.Growing() {
			growingPuts++
			if !was {
				growths++
			}
		}
	}
	// 16 positions and the rest of the cluster under way: at 3/4 full a
	// cluster of more than a few hundred slots is vanishingly rare.
	if maxMoved > 1000 {
		t.Fatalf("an insert moved %d slots; want a bounded step (at most 1000)", maxMoved)
	}
	if growths < 20 || growingPuts < n/20 {
		t.Fatalf("%d growths over %d inserts while growing; want the moves spread over many inserts", growths, growingPuts)
	}
	for k.x.Growing() {
		k.x.Step(4096)
	}
	if k.x.Slots()*3 < n*4 || k.x.Slots() > 2*n {
		t.Fatalf("%d slots for %d keys; want between 4/3 and 2 a key", k.x.Slots(), n)
	}
	for s := uint32(1); s <= n; s += 97 {
		if got := k.x.Get(k.hashes[s], k.match(s)); got != s {
			t.Fatalf("key %d: got %d", s, got)
		}
	}
	t.Logf("%d growths, %d of %d inserts while growing, at most %d slots moved by one", growths, growingPuts, n, maxMoved)
}
