package server

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"drover/admin"
	"drover/coord/id"
	"drover/net/wire"
)

// Requeues across coordinators (Options.ClusterJobs, the Redis Cluster
// store). A requeue target naming a key (its fingerprint) whose job this
// coordinator does not hold is asked of the coordinator that holds it:
// off the reactor, the read lane finds where the job is (Locate, or the
// retries the others published), posts the requeue to that coordinator
// (ClusterJobs.Ask) and waits for its answer; the ACTED goes once every
// target is answered, the reactor serving meanwhile. Each coordinator
// reads the actions posted to it (startControl), carries them out on its
// reactor as its own operator's, for the jobs it holds only (never asking
// further), and answers; an action read is removed from the store only
// once answered, so one the reactor did not carry out before it stopped
// is answered as not done when the coordinator leaves the store (or its
// sweeper does that, store/redis control.go). A job waiting in the cluster's queue is already
// queued; a holder that died holding a job has it returned to the queue by
// the sweep.

// requeueLocal resolves the requeue targets naming a key (32 hex digits)
// to this coordinator's job of the key when it holds one, and returns the
// keys whose job it does not hold. Decimal job ids pass through.
func (cl *cluster) requeueLocal(now time.Time, a admin.Action) (admin.Action, []id.Fingerprint) {
	var elsewhere []id.Fingerprint
	out := a
	out.Targets = nil
	for _, t := range a.Targets {
		fp, err := id.ParseFingerprint(t)
		if _, derr := strconv.ParseUint(t, 10, 64); derr == nil || err != nil {
			out.Targets = append(out.Targets, t)
			continue
		}
		page, qerr := cl.c.Query(now, admin.Query{View: admin.ViewJobs, Key: t})
		if qerr == nil && len(page.Jobs) > 0 && page.Jobs[0].JobID != 0 {
			out.Targets = append(out.Targets, strconv.FormatUint(page.Jobs[0].JobID, 10))
			continue
		}
		elsewhere = append(elsewhere, fp)
	}
	return out, elsewhere
}

// clusterRequeue resolves a requeue's targets naming a key to this
// coordinator's jobs; the others are refused with a line each (the store
// is not shared: no other coordinator holds them).
func (cl *cluster) clusterRequeue(now time.Time, a admin.Action) (admin.Action, []string) {
	out, elsewhere := cl.requeueLocal(now, a)
	var refused []string
	for _, fp := range elsewhere {
		refused = append(refused, fmt.Sprintf("requeue key %s: no job of it on this coordinator", fp))
	}
	return out, refused
}

// clusterAct answers a requeue, evict, drain or undrain on a Redis
// Cluster store (ident and req address the ACTED) and reports whether it
// did: this coordinator's jobs and workers at once, the others' asked of
// their coordinators off the reactor (workers: clusterworkers.go).
func (cl *cluster) clusterAct(ident []byte, req uint64, now time.Time, a admin.Action) bool {
	cj := cl.cj
	if cj == nil || a.Crawler != "" {
		return false
	}
	if isWorkerAction(a.Kind) && len(a.Targets) > 0 {
		cl.clusterWorkerAct(ident, req, now, a)
		return true
	}
	if a.Kind != admin.ActRequeue {
		return false
	}
	act, elsewhere := cl.requeueLocal(now, a)
	var res admin.ActionResult
	if len(act.Targets) > 0 || len(elsewhere) == 0 {
		var err error
		if res, err = cl.c.Act(now, act); err != nil {
			cl.out.reject(onAdmin, ident, req, errorCode(err), "%v", err)
			return true
		}
	}
	if len(elsewhere) == 0 {
		cl.acted(ident, req, a, res)
		return true
	}
	type target struct {
		fp    id.Fingerprint
		host  string
		known bool
	}
	ts := make([]target, len(elsewhere))
	for i, fp := range elsewhere {
		ts[i].fp = fp
		ts[i].host, ts[i].known = cj.Host(fp)
	}
	io := cl.reads
	ask := func() func() {
		self := cj.Self()
		var published *[]admin.JobRow // the others' retries, read once
		for _, t := range ts {
			n, lines := requeueElsewhere(cj, self, t.fp, t.host, t.known, &published)
			res.Affected += n
			res.Errors = append(res.Errors, lines...)
		}
		return func() {
			cl.acted(ident, req, a, res)
			cl.adm.dirty = true
		}
	}
	switch {
	case io == nil: // before Run, in tests
		ask()()
	case io.posted >= clusterReadQueue:
		for _, t := range ts {
			res.Errors = append(res.Errors, fmt.Sprintf("requeue key %s: not requeued: its job is not on this coordinator, and %d queries wait on the cluster already; retry later", t.fp, io.posted))
		}
		cl.acted(ident, req, a, res)
	default:
		ident = append([]byte(nil), ident...)
		io.put(ask)
	}
	return true
}

// acted answers an action with its result, and logs it.
func (cl *cluster) acted(ident []byte, req uint64, a admin.Action, res admin.ActionResult) {
	cl.log.Info("operator action", "kind", a.Kind, "targets", a.Targets, "affected", res.Affected, "errors", len(res.Errors))
	cl.out.toConsole(ident, &wire.Acted{Req: req, Result: res})
	cl.adm.dirty = true
}

// requeueElsewhere requeues key fp's job where it is in the cluster (off
// the reactor): asks the coordinator holding it (claimed there, or failed
// there as its published retries say), or says why not. It returns how
// many jobs were requeued and the lines of the targets refused.
func requeueElsewhere(cj ClusterJobs, self string, fp id.Fingerprint, host string, known bool, published **[]admin.JobRow) (int, []string) {
	var row admin.JobRow
	var found bool
	if known {
		var err error
		if row, found, err = cj.Locate(fp, host); err != nil {
			return 0, []string{fmt.Sprintf("requeue key %s: no job of it on this coordinator, and looking for it in the cluster failed: %v", fp, err)}
		}
	}
	if !found {
		if *published == nil {
			rows, _, err := cj.Retries()
			if err != nil {
				return 0, []string{fmt.Sprintf("requeue key %s: no job of it on this coordinator, and reading the others' retries failed: %v", fp, err)}
			}
			*published = &rows
		}
		for _, r := range **published {
			if r.Key == fp.String() && r.Coordinator != "" {
				row, found = r, true
				break
			}
		}
	}
	switch {
	case !found && !known:
		return 0, []string{fmt.Sprintf("requeue key %s: no job of it on this coordinator, and its host is not known here: requeue it by its row in view jobs (a page that lists it makes its host known), or on the coordinator that holds it", fp)}
	case !found:
		return 0, []string{fmt.Sprintf("requeue key %s: no job of it on this coordinator nor in the cluster", fp)}
	case row.Coordinator == "" && row.State == "queued":
		return 0, []string{fmt.Sprintf("requeue key %s (%s): not requeued: its job is already waiting in the cluster's queue (job %d there)", fp, row.URL, row.QueueID)}
	case row.Coordinator == "" || row.Coordinator == self:
		return 0, []string{fmt.Sprintf("requeue key %s (%s): not requeued: %s", fp, row.URL, row.Reason)}
	}
	c := row.Coordinator
	res, err := cj.Ask(c, admin.Action{Kind: admin.ActRequeue, Targets: []string{fp.String()}})
	if err != nil {
		where := "claimed by coordinator " + c
		if row.State != "claimed" {
			where = row.State + " on coordinator " + c
		}
		return 0, []string{fmt.Sprintf("requeue key %s (%s): its job is %s; asking it to requeue: %v", fp, row.URL, where, err)}
	}
	return res.Affected, res.Errors // prefixed "on coordinator C: " by Ask
}

// controlWait is how long a read of the actions posted to this
// coordinator waits (and so how long stopping may wait for it).
const controlWait = time.Second

// startControl starts the goroutine that reads the actions other
// coordinators post to this one (Options.ClusterJobs) and hands them to
// the reactor, and returns the function that stops it.
func (cl *cluster) startControl() (stop func()) {
	cj := cl.cj
	io := cl.io
	if cj == nil || io == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan struct{})
	log := cl.log
	go func() {
		defer close(exited)
		failing := false
		for ctx.Err() == nil {
			acts, tickets, err := cj.Requests(ctx, controlWait)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if !failing {
					log.Warn("reading the actions other coordinators post to this one", "err", err)
				}
				failing = true
				select {
				case <-ctx.Done():
				case <-time.After(controlWait):
				}
				continue
			}
			failing = false
			if len(acts) == 0 {
				continue
			}
			answers := make(chan []admin.ActionResult, 1)
			io.run(func() { answers <- cl.actForPeer(acts) })
			reply := func(res []admin.ActionResult) {
				for i := range res {
					if err := cj.Reply(tickets[i], res[i]); err != nil {
						log.Warn("answering another coordinator's action", "err", err)
					}
				}
			}
			select {
			case res := <-answers:
				reply(res)
			case <-ctx.Done():
				// Stopping: the reactor has stopped, having carried the
				// actions out or not. Those it did not stay in the
				// processing list, answered when the store is left.
				select {
				case res := <-answers:
					reply(res)
				default:
				}
				return
			}
		}
	}()
	return func() {
		cancel()
		<-exited
	}
}

// actForPeer carries out, on the reactor, the actions other coordinators
// posted: requeues of the jobs this coordinator holds, and evicts, drains
// and undrains of the workers it has sessions with, never asked further.
func (cl *cluster) actForPeer(acts []admin.Action) []admin.ActionResult {
	now := cl.now()
	out := make([]admin.ActionResult, len(acts))
	for i, a := range acts {
		if isWorkerAction(a.Kind) && a.Crawler == "" {
			out[i] = cl.workersForPeer(now, a)
			continue
		}
		if a.Kind != admin.ActRequeue || a.Crawler != "" {
			out[i].Errors = []string{fmt.Sprintf("action %s: not taken from another coordinator (requeue, evict, drain and undrain only)", a.Kind)}
			continue
		}
		act, elsewhere := cl.requeueLocal(now, a)
		if len(act.Targets) > 0 {
			res, err := cl.c.Act(now, act)
			if err != nil {
				res.Errors = append(res.Errors, err.Error())
			}
			out[i] = res
		}
		for _, fp := range elsewhere {
			out[i].Errors = append(out[i].Errors, fmt.Sprintf("requeue key %s: this coordinator holds no job of it (any more)", fp))
		}
		cl.log.Info("action from another coordinator", "kind", a.Kind, "targets", a.Targets, "affected", out[i].Affected, "errors", len(out[i].Errors))
	}
	cl.adm.dirty = true
	return out
}
