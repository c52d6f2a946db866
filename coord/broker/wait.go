package broker

import "drover/admin"

// Wait is why a job is not running although it is not finished. Its row
// carries it twice (admin.JobRow): as a word of admin.Waits for clients
// (Wire) and as the first words of the reason for people (Wait.text); the
// table below writes both for every kind, in one place.
type Wait uint8

// The reasons a job waits.
const (
	WaitNone        Wait = iota // not waiting, or running
	WaitUnroutable              // no live worker has the headers it needs
	WaitPaused                  // dispatch is paused
	WaitPolite                  // its host's politeness holds it back
	WaitRetry                   // its retry delay after a failure
	WaitHostBackoff             // its host is backed off (429/503)
	WaitReclaim                 // restored as running: its worker may reclaim it
	WaitPaged                   // queued in the coordinator's store only (coord pages it out)

	numWaits = iota
)

var waitWords = [numWaits]struct {
	word, sep string
	wire      admin.Wait
	state     JobState // the state of the jobs that wait so
}{
	WaitNone:        {"", "", "", 0},
	WaitUnroutable:  {"unroutable", ": ", admin.WaitUnroutable, Queued},
	WaitPaused:      {"paused", "", admin.WaitPaused, Queued},
	WaitPolite:      {"polite", ": ", admin.WaitPolite, Queued},
	WaitRetry:       {"retry", " ", admin.WaitRetry, Backoff},
	WaitHostBackoff: {"host back-off", " ", admin.WaitHostBackoff, Backoff},
	WaitReclaim:     {"awaiting reclaim", " ", admin.WaitReclaim, Dispatched},
	WaitPaged:       {"in the store only", " ", admin.WaitPaged, Queued},
}

// String is the reason's words, e.g. "host back-off".
func (w Wait) String() string {
	if w < numWaits {
		return waitWords[w].word
	}
	return "unknown"
}

// Wire is w's word on the wire (admin.JobRow.Wait), e.g. "host-backoff";
// empty for WaitNone.
func (w Wait) Wire() admin.Wait {
	if w < numWaits {
		return waitWords[w].wire
	}
	return ""
}

// text is the reason shown for w with its detail, e.g. "host back-off
// until 2026-12-02T10:00:00Z".
func (w Wait) text(detail string) string {
	if detail == "" || w >= numWaits {
		return w.String()
	}
	return waitWords[w].word + waitWords[w].sep + detail
}

// waitStates is the set of states of the jobs that may wait for one of
// the words (admin.Wait) named: none for words the broker does not know,
// or for paged (those jobs are not in the broker's memory).
func waitStates(words []string) stateMask {
	var m stateMask
	for w := WaitUnroutable; w < numWaits; w++ {
		for _, s := range words {
			if s == string(waitWords[w].wire) && w != WaitPaged {
				m |= 1 << waitWords[w].state
			}
		}
	}
	return m
}
