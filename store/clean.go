package store

import "fmt"

// Clean shutdown (issue 14). A coordinator that stops cleanly — its
// workers told, their jobs requeued, every record durable — calls
// MarkClean last. The next Open reads the mark: TakeClean then says that
// the store holds every dispatch the coordinator made, so that its restore
// need not suppose that an attempt may be running unrecorded (a crash
// leaves no mark, and a restore after it does suppose so). The mark names
// the epoch that wrote it: it speaks only for the Open right after, so a
// crash after a clean restart is never taken for a clean stop.

// internalClean is the internal value MarkClean writes: the epoch that
// ended cleanly.
const internalClean = "clean"

// MarkClean records, durably, that this Open ends cleanly: the caller
// wrote its last record of work and nothing of it is pending. It waits
// until the mark is durable under the sync policy (with SyncNone, Close
// makes it durable: the writer fsyncs what it wrote before it stops).
func (s *Store) MarkClean() error {
	b := s.NewBatch()
	if err := b.set(internalKey(internalClean), be64(s.epoch)); err != nil {
		return err
	}
	if err := s.Commit(b); err != nil {
		return fmt.Errorf("store: mark a clean shutdown: %w", err)
	}
	return nil
}

// TakeClean reports whether the Open before this one ended with MarkClean
// (and nothing opened the store in between), once: later calls report
// false, so that a second coordinator restored from the same open store
// never takes the first one's run, which left no mark, for clean.
func (s *Store) TakeClean() bool { return s.openedClean.Swap(false) }
