package admin

// Wait is why a job that has not finished is not running: the "wait"
// member of its JobRow, one word of the list below, for a client to switch
// on (colour, count, filter with wait=). The row's reason says the same for
// people, with the detail. The coordinator's broker maps its own reasons to
// these words in one table (coord/broker/wait.go); docs/PROTOCOL.md §13
// lists them, and a test keeps the three equal. A receiver keeps a word it
// does not know (a newer server may add some) as it is.
type Wait string

// The wait words. Empty: the job does not wait (running, finished, or
// queued for a free slot only).
const (
	WaitUnroutable  Wait = "unroutable"   // queued: no live worker has the headers it needs
	WaitPaused      Wait = "paused"       // queued: dispatch is paused
	WaitPolite      Wait = "polite"       // queued: its host's politeness limit holds it back
	WaitPaged       Wait = "paged"        // queued: in the coordinator's store only (store.resident_jobs)
	WaitRetry       Wait = "retry"        // backoff: its retry delay after a failure
	WaitHostBackoff Wait = "host-backoff" // backoff: its host is backed off (429/503)
	WaitReclaim     Wait = "reclaim"      // dispatched: restored after a restart, its worker may reclaim it
)

// Waits returns every wait word, in the document's order.
func Waits() []Wait {
	return []Wait{WaitUnroutable, WaitPaused, WaitPolite, WaitPaged, WaitRetry, WaitHostBackoff, WaitReclaim}
}

// String is the word, e.g. "host-backoff".
func (w Wait) String() string { return string(w) }
