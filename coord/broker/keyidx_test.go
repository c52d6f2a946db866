package broker

import (
	"math/rand/v2"
	"testing"

	"drover/coord/id"
	"drover/coord/offheap"
)

// TestKeyIndexModel drives keyIndex with random sets and deletes, on
// fingerprints that share their home slots often (few distinct low bits),
// against a map.
func TestKeyIndexModel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	js := &jobStore{}
	js.mem = offheap.New(js)
	var x keyIndex
	x.init(js)
	model := map[id.Fingerprint]JobID{}
	fps := make([]id.Fingerprint, 300)
	for i := range fps {
		fps[i][0] = byte(r.IntN(16)) // home slots collide
		fps[i][8] = byte(i)
		fps[i][9] = byte(i >> 8)
	}
	var live []JobID
	for step := range 20000 {
		switch op := r.IntN(10); {
		case op < 6: // a new job of a random key
			fp := fps[r.IntN(len(fps))]
			j := js.alloc()
			j.id = uint32(js.n)
			j.fp = fp
			x.set(fp, j.jobID())
			model[fp] = j.jobID()
			live = append(live, j.jobID())
		case len(live) > 0: // forget a random job, as retain does
			k := r.IntN(len(live))
			jid := live[k]
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
			j := js.get(jid)
			fp := j.fp
			x.del(fp, jid)
			if model[fp] == jid {
				delete(model, fp)
			}
			js.forget(j)
		}
		if step%97 == 0 || step == 19999 {
			if x.x.Len() != len(model) {
				t.Fatalf("step %d: %d entries, want %d", step, x.x.Len(), len(model))
			}
			for _, fp := range fps {
				got, ok := x.get(fp)
				want, wok := model[fp]
				if got != want || ok != wok {
					t.Fatalf("step %d: get %x = %d %v, want %d %v", step, fp[:1], got, ok, want, wok)
				}
			}
		}
	}
}
