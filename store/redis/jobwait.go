package redis

import (
	"fmt"
	"strconv"
	"time"

	"drover/admin"
)

// Why the cluster's queued jobs wait (admin.Wait, the rows' wait and the
// first words of their reason, as a coordinator's own rows have them), as
// far as Redis knows it: a job in the shared queue of a host backed off
// (a 429 or 503 a coordinator's worker got: POL's bu) waits host-backoff;
// one in the host's polite queue while the host's next polite claim is
// due later (POL's next) or while the live coordinators' claims last
// found the host at its politeness cap (their summaries' polite hosts)
// waits polite. A job another coordinator claimed carries the wait that
// coordinator published for it (jobheld.go: unroutable, paused, polite,
// retry, host-backoff, reclaim; none while it runs).

// hostWait is why a host's jobs in the shared queue wait.
type hostWait struct {
	backoff time.Duration // until its back-off ends (0: none)
	polite  time.Duration // until its next polite claim (0: none due later)
}

// hostWaits reads the waits of hosts (queue.lua's wait), as of now on the
// client's clock.
func (k *walker) hostWaits(hosts []string) (map[string]hostWait, error) {
	if len(hosts) == 0 {
		return nil, nil
	}
	l := k.v.l
	calls := make([]call, len(hosts))
	for i, h := range hosts {
		calls[i] = call{host: h, keys: l.queueKeys(h, l.coord), args: []any{"wait"}}
	}
	vals, errs := l.runScript(k.ctx, queueScript, calls)
	out := make(map[string]hostWait, len(hosts))
	for i, h := range hosts {
		v, err := stringsAnswer(vals[i], errs[i])
		if err == nil && len(v) != 2 {
			err = fmt.Errorf("the script answered %d strings; want 2", len(v))
		}
		if err != nil {
			return nil, fmt.Errorf("reading why host %q's jobs wait: %w", h, err)
		}
		bo, _ := strconv.ParseInt(v[0], 10, 64)
		po, _ := strconv.ParseInt(v[1], 10, 64)
		out[h] = hostWait{backoff: time.Duration(bo) * time.Microsecond, polite: time.Duration(po) * time.Microsecond}
	}
	return out, nil
}

// politeHost reports whether the live coordinators' claims last found
// host h at its politeness cap, as their summaries say.
func (k *walker) politeHost(h string) bool {
	if k.polite == nil {
		k.polite = make(map[string]bool)
		k.summaryOf("")
		for _, s := range k.sums {
			for _, r := range s.Polite {
				k.polite[r.Host] = true
			}
		}
	}
	return k.polite[h]
}

// queuedWait sets the wait of r, a row of host h's shared queue (polite:
// of its polite queue), from the host's wait hw.
func (k *walker) queuedWait(r *admin.JobRow, h string, polite bool, hw hostWait) {
	now := k.v.l.cfg.Clock.Now()
	switch {
	case hw.backoff > 0:
		r.Wait = admin.WaitHostBackoff
		r.Reason = "host back-off until " + now.Add(hw.backoff).UTC().Format(time.RFC3339) + ", " + r.Reason
	case polite && hw.polite > 0:
		r.Wait = admin.WaitPolite
		r.Reason = "polite: its host's next fetch may be claimed in " + hw.polite.Round(time.Millisecond).String() + ", " + r.Reason
	case polite && k.politeHost(h):
		r.Wait = admin.WaitPolite
		r.Reason = "polite: its host is at its politeness cap, " + r.Reason
	}
}
