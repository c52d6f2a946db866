package client

import (
	"testing"

	"drover/coord/id"
	"drover/net/internal/testsrv"
	"drover/net/wire"
)

// TestDuplicateCarriesJobID: PROTOCOL.md §6.11 — a duplicate SUBMITTED
// item carries "the existing job's id, or 0 if there is none (the key is
// done)"; coord.submitOne answers Duplicate without the job id, so the
// server sends 0 for a key whose job is queued.
func TestDuplicateCarriesJobID(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	c := dial(t, s, Options{})
	item := []wire.SubmitItem{{Key: key("http://dup.test/")}}
	first, err := c.Submit(ctxT(t), item)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Submit(ctxT(t), item)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Status != wire.SubmitDuplicate || again[0].JobID != first[0].JobID {
		t.Fatalf("resubmit: %+v, want duplicate naming job %d", again[0], first[0].JobID)
	}
}

// TestOwnerReason: PROTOCOL.md §6.6 — a REQUEST for a key the
// session already owns is ok with reason "owner"; the ledger gives no
// reason (ledger.ReasonNone), so the client cannot tell it from a fresh
// grant.
func TestOwnerReason(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	c := dial(t, s, Options{})
	k := []id.Key{key("http://owner.test/")}
	if _, err := c.Request(ctxT(t), k); err != nil {
		t.Fatal(err)
	}
	vs, err := c.Request(ctxT(t), k)
	if err != nil {
		t.Fatal(err)
	}
	if vs[0].Verdict != wire.VerdictOK || vs[0].Reason != "owner" {
		t.Fatalf("second request: %+v, want ok (owner)", vs[0])
	}
}
