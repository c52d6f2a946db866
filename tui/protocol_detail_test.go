package tui_test

import (
	"strings"
	"testing"

	"drover/net/worker"
)

// The detail pane of a job shows its attempts over the real protocol: the
// console asks by key fingerprint, and the coordinator answers with the
// key's newest job and its history.
func TestProtocolJobDetailShowsAttempts(t *testing.T) {
	s := startCoordinator(t)
	p := newProbe(t, s)
	w1 := startWorker(t, s, p, "w1", 1, failing(1, worker.External))
	url := "https://example.com/detail"
	jid := submit(t, s, url)[0]
	w1.next(t)
	p.jobState(jid, "failed")
	c := openConsole(t, s, false)
	c.press("2")
	c.selectRow(url)
	c.press("enter")
	c.waitScreen("the job's attempts in the detail pane", func(s string) (bool, string) {
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "#1") && strings.Contains(l, "w1") && strings.Contains(l, "fetch failed") {
				return true, ""
			}
		}
		return false, "no attempt line naming w1 and its error"
	})
}
