package redis

import (
	"context"
	"strings"
	"testing"

	"drover/coord/id"
	"drover/coord/ledger"
)

// Every key a call declares carries one host's hash tag; a call that named
// two hosts' keys would be refused by the cluster (a function declared
// without allow-cross-slot-keys may not cross slots), and the ledger never
// makes one: a batch over many hosts runs one function call per host.
func TestOneSlotPerCall(t *testing.T) {
	rdb := client(t)
	l, err := newTestLedger(t, rdb, ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys := append(l.baseKeys("a.example", 0), l.pre("b.example")+"n")
	l.runScripts(ctx, []call{{host: "a.example", keys: l.baseKeys("a.example", 0), args: l.args("expire", base, 0)}}) // loads the library
	err = rdb.FCall(ctx, ledgerFn, keys, l.args("expire", base, 0)...).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script over two hosts' keys: err = %v; want CROSSSLOT", err)
	}
	var items []ledger.Item
	for _, h := range []string{"a.example", "b.example", "c.example", "a.example"} {
		k := id.Key{Crawler: "c", Processor: "p", URL: "http://" + h + "/x"}
		items = append(items, ledger.Item{Key: k, FP: k.Fingerprint()})
	}
	got := l.RequestBatch(base, 1, 1, items, nil)
	want := []ledger.Result{{Verdict: ledger.OK}, {Verdict: ledger.OK}, {Verdict: ledger.OK}, {Verdict: ledger.OK, Reason: ledger.ReasonOwner}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("batch over three hosts: result %d = %+v; want %+v (err %v)", i, got[i], want[i], l.Err())
		}
	}
}
