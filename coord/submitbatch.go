package coord

import (
	"time"

	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// batchSubmits says whether Submit takes a message's jobs to the ledger
// as batches: with a ledger kept elsewhere (Config.Backend), where every
// call is a round trip, and no job cap (whose check is per job).
func (c *Coordinator) batchSubmits() bool { return c.mem == nil && c.cfg.MaxJobs == 0 }

// submitBatch is Submit for a ledger kept elsewhere: the jobs' keys are
// requested in one batch, the granted ones queued in one, and the jobs
// pushed to the shared queue in one, with the same verdicts as one job at
// a time: a key listed twice is accepted once, its second listing a
// duplicate (queued).
func (c *Coordinator) submitBatch(now time.Time, s id.Session, reqID uint64, jobs []JobSpec, dst []SubmitVerdict) []SubmitVerdict {
	base := len(dst)
	specs := make([]broker.Spec, len(jobs))
	items := c.scratch.items[:0]
	idx := make([]int, 0, len(jobs)) // the job of each item
	first := make(map[id.Fingerprint]int, len(jobs))
	for i := range jobs {
		nk, fp, err := c.normalize(jobs[i].Key)
		if err != nil {
			dst = append(dst, SubmitVerdict{Status: Rejected, Reason: ReasonBadKey, Detail: err.Error()})
			continue
		}
		specs[i] = broker.Spec{Key: nk, FP: fp, Host: id.Host(nk.URL), Headers: jobs[i].Headers, Payload: jobs[i].Payload}
		dst = append(dst, SubmitVerdict{FP: fp})
		if _, dup := first[fp]; dup {
			continue // answered below, after its first listing
		}
		first[fp] = i
		items = append(items, ledger.Item{Key: nk, FP: fp})
		idx = append(idx, i)
	}
	res := c.led.RequestBatch(now, s, reqID, items, c.scratch.results[:0])
	var granted []id.Fingerprint
	var grantedJob []int
	verdict := make([]SubmitVerdict, len(jobs)) // by job index; set for each first listing
	for n, i := range idx {
		if res[n].Verdict == ledger.OK {
			granted = append(granted, specs[i].FP)
			grantedJob = append(grantedJob, i)
			continue
		}
		verdict[i] = c.notGranted(s, reqID, &specs[i], res[n].Verdict, res[n].Reason) // ops.go
	}
	c.scratch.items, c.scratch.results = reuse(items), reuse(res)
	if len(granted) > 0 {
		qres := c.led.QueueBatch(now, s, granted, nil)
		var push []broker.Spec
		var pushJob []int
		for n, i := range grantedJob {
			if qres[n].Verdict != ledger.OK {
				// Cannot happen for a key s was just granted; report it rather than lose it.
				verdict[i] = SubmitVerdict{FP: specs[i].FP, Status: Rejected, Reason: qres[n].Reason, Detail: "queue after grant failed"}
				continue
			}
			c.submitted++
			push = append(push, specs[i])
			pushJob = append(pushJob, i)
		}
		ids := c.pushSharedBatch(now, push)
		for n, i := range pushJob {
			j := ids[n]
			if j == 0 { // no shared queue, or it did not take the job: this broker keeps it
				j = c.brk.Submit(now, specs[i])
				c.lend(specs[i].FP) // a no-op today: batches run only on a shared ledger (c.mem nil)
			}
			verdict[i] = SubmitVerdict{FP: specs[i].FP, Status: Accepted, Job: j}
		}
	}
	// Fill in the verdicts in job order; a repeated key is a duplicate.
	for i := range jobs {
		d := &dst[base+i]
		if d.Status == Rejected && d.Reason == ReasonBadKey {
			continue
		}
		fp := d.FP
		if f := first[fp]; f != i {
			c.dedupHits++
			*d = SubmitVerdict{FP: fp, Status: Duplicate, Reason: ledger.ReasonQueued}
			if v := verdict[f]; v.Status == Accepted && v.Job != 0 {
				d.Job = v.Job
			}
		} else {
			*d = verdict[i]
		}
	}
	return dst
}
