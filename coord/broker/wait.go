package broker

// Wait is why a job is not running although it is not finished: the
// first words of its row's reason (admin.JobRow.Reason), which Wait.text
// writes for every kind in one place.
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
)

var waitWords = [...]struct{ word, sep string }{
	WaitNone:        {"", ""},
	WaitUnroutable:  {"unroutable", ": "},
	WaitPaused:      {"paused", ""},
	WaitPolite:      {"polite", ": "},
	WaitRetry:       {"retry", " "},
	WaitHostBackoff: {"host back-off", " "},
	WaitReclaim:     {"awaiting reclaim", " "},
}

// String is the reason's words, e.g. "host back-off".
func (w Wait) String() string {
	if int(w) < len(waitWords) {
		return waitWords[w].word
	}
	return "unknown"
}

// text is the reason shown for w with its detail, e.g. "host back-off
// until 2026-12-02T10:00:00Z".
func (w Wait) text(detail string) string {
	if detail == "" || int(w) >= len(waitWords) {
		return w.String()
	}
	return waitWords[w].word + waitWords[w].sep + detail
}
