package tui

import (
	"fmt"
	"strings"
	"time"

	"drover/admin"
	"drover/tui/common"

	"charm.land/lipgloss/v2"
)

// coordStatus is what the console knows of the coordinator between
// rounds: the header's totals, the dispatch rate sampled from them, and
// whether answers are coming (STALE otherwise).
type coordStatus struct {
	totals     admin.Totals
	haveTotals bool
	rates      []float64    // dispatches per second, one sample per second or more
	sample     admin.Totals // the Totals the last rate sample was taken from
	haveSample bool

	stale    bool
	staleErr string
	lastOK   time.Time // clock time of the last good answer
	closed   bool      // Changed was closed: the backend is gone
}

// setTotals keeps the header figures and samples the dispatch rate at most
// once a second, from the coordinator's own timestamps.
func (s *coordStatus) setTotals(t admin.Totals, now time.Time) {
	s.totals, s.haveTotals = t, true
	if t.At.IsZero() {
		t.At = now
	}
	if !s.haveSample || t.Dispatches < s.sample.Dispatches || t.At.Before(s.sample.At) {
		s.sample, s.haveSample = t, true
		return
	}
	dt := t.At.Sub(s.sample.At)
	if dt < time.Second {
		return
	}
	s.rates = append(s.rates, float64(t.Dispatches-s.sample.Dispatches)/dt.Seconds())
	if len(s.rates) > rateSamples {
		s.rates = s.rates[len(s.rates)-rateSamples:]
	}
	s.sample = t
}

// header renders the three header lines: where and how the coordinator is,
// jobs by state, workers by state and the dispatch rate.
func (m *model) header() []string {
	s := m.Styles
	sep := s.Muted.Render(" · ")
	version := m.opts.Version
	if version == "" {
		version = "dev"
	}
	live := s.Live.Render("● live")
	if m.coord.stale {
		age := ""
		if !m.coord.lastOK.IsZero() {
			age = " " + common.Since(m.Now(), m.coord.lastOK)
		}
		live = s.Stale.Render(" ✗ STALE" + age + " ")
	} else if !m.coord.haveTotals {
		live = s.Muted.Render("… connecting")
	}
	mode := s.ReadWrite.Render("RW")
	if m.opts.ReadOnly {
		mode = s.ReadOnly.Render("RO read-only")
	}
	l1 := s.Title.Render("drover "+common.Sanitize(version)) + sep + s.Text.Render(common.Sanitize(m.b.Endpoint())) +
		sep + live + sep + mode
	if m.coord.totals.Paused {
		l1 += sep + s.Paused.Render(" ‖ PAUSED ")
	}
	if m.coord.haveTotals && m.coord.totals.Settled() {
		done := m.opts.DoneText
		if done == "" {
			done = "all done"
		}
		l1 += sep + s.OK.Render("✓ "+common.Sanitize(done))
	}
	if c := m.coord.totals.Cluster; c != nil { // several coordinators on a Redis Cluster
		alive := 0
		for _, r := range c.Coordinators {
			if r.Alive {
				alive++
			}
		}
		l1 += sep + s.Muted.Render("cluster ") + s.Text.Render(fmt.Sprintf("%d/%d coordinators", alive, len(c.Coordinators))) +
			s.Muted.Render(" queue ") + s.Text.Render(common.Compact(uint64(max(c.Queued, 0)))) +
			s.Muted.Render(" claimed ") + s.Info.Render(common.Compact(uint64(max(c.Claimed, 0)))) +
			s.Muted.Render(" done ") + s.OK.Render(common.Compact(uint64(max(c.Done, 0))))
	}
	if m.opts.Notice != nil {
		if n := m.opts.Notice(); n != "" {
			l1 += sep + s.Warn.Render(common.Sanitize(n))
		}
	}
	t := m.coord.totals
	count := func(label string, n int, st lipgloss.Style) string {
		return s.Muted.Render(label+" ") + st.Render(common.Compact(uint64(max(n, 0))))
	}
	l2 := s.Muted.Render("jobs    ") + strings.Join([]string{
		count("queued", t.Queued, s.Text), count("dispatched", t.Dispatched, s.Info),
		count("backoff", t.Backoff, s.Warn), count("done", t.Done, s.OK),
		count("failed", t.Failed, s.Error), count("unroutable", t.Unroutable, s.Warn),
	}, "  ")
	if t.Polite > 0 { // queued jobs their hosts' politeness limits hold back
		l2 += "  " + count("polite", t.Polite, s.Info)
	}
	rate := "-"
	if len(m.coord.rates) > 0 {
		rate = common.Rate(m.coord.rates[len(m.coord.rates)-1])
	}
	wcounts := []string{
		count("idle", t.WorkersIdle, s.OK), count("busy", t.WorkersBusy, s.Info),
		count("draining", t.WorkersDraining, s.Warn), count("lost", t.WorkersLost, s.Error),
	}
	if t.WorkersHeld > 0 { // held back after dying before a first result
		wcounts = append(wcounts, count("held", t.WorkersHeld, s.Warn))
	}
	l3 := s.Muted.Render("workers ") + strings.Join(wcounts, "  ") + sep + s.Muted.Render("dispatch ") + s.Text.Render(rate)
	if spark := common.Sparkline(m.coord.rates, 16); spark != "" {
		l3 += " " + s.Accent.Render(spark)
	}
	l3 += sep + count("waiters", t.Waiters, s.Text)
	if n := t.Forbidden + t.HandshakesRefused; n > 0 {
		// Clients the coordinator refused (with keys: docs/PROTOCOL.md §15):
		// shown only once there are some.
		l3 += sep + s.Muted.Render("refused ") + s.Error.Render(common.Compact(n))
	}
	if !m.coord.haveTotals {
		l2, l3 = s.Muted.Render("jobs    -"), s.Muted.Render("workers -")
	}
	return []string{fitLine(l1, m.Width), fitLine(l2, m.Width), fitLine(l3, m.Width)}
}
