package ledger

import (
	"time"

	"drover/coord/id"
)

// Backend is the ledger's exported API apart from the embedded store's
// done-record cache (Known, KnownDone, WriteBatch, WritesDurable,
// RestoreStored, StoredExpired, DoneCache): what a ledger kept elsewhere
// must offer to stand in for *Ledger. *Ledger implements it in memory;
// drover/store/redis implements it on a Redis Cluster shared by several
// coordinators. The rules are the package comment's; the scenario files
// in testdata are run against every implementation.
type Backend interface {
	// Request, RequestBatch, Queue, QueueBatch, Done, DoneBatch, Requeue,
	// Release and Tick are the transitions, as on *Ledger.
	Request(now time.Time, s id.Session, reqID uint64, k id.Key, fp id.Fingerprint) (Verdict, Reason)
	RequestBatch(now time.Time, s id.Session, reqID uint64, items []Item, dst []Result) []Result
	Queue(now time.Time, s id.Session, fp id.Fingerprint) (Verdict, Reason)
	QueueBatch(now time.Time, s id.Session, fps []id.Fingerprint, dst []Result) []Result
	Done(now time.Time, k id.Key, fp id.Fingerprint, o Outcome)
	DoneBatch(now time.Time, items []Item, o Outcome)
	Requeue(now time.Time, k id.Key, fp id.Fingerprint)
	Release(now time.Time, s id.Session)
	Tick(now time.Time)
	// NextDeadline is the earliest lease deadline: the caller's poll timeout.
	NextDeadline() (time.Time, bool)

	// Lookup, Waiters, Counts, Requested and Queued read the table.
	Lookup(now time.Time, fp id.Fingerprint) (Record, bool)
	Waiters(fp id.Fingerprint) []Waiter
	Counts() Counts
	Requested(offset, limit int) []Record
	Queued(offset, limit int) []Record

	// TakeAnswers, TakeEvents and TakeWrites hand over what the
	// transitions produced; Restore rebuilds (or imports) a record.
	TakeAnswers(dst []Answer) []Answer
	TakeEvents(dst []Event) []Event
	TakeWrites(dst []Write) []Write
	Restore(w Write)
}

var _ Backend = (*Ledger)(nil)
