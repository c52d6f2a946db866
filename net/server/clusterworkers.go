package server

import (
	"fmt"
	"slices"
	"time"

	"drover/admin"
	"drover/net/wire"
)

// Evict, drain and undrain across coordinators (Options.ClusterJobs, the
// Redis Cluster store). A worker is connected to one coordinator; an
// operator attached to another names it all the same. Each coordinator
// publishes the ids of the workers it has sessions with (noteRetries,
// about once a second, with its summary); a target naming a worker this
// coordinator has no session with is looked up there (ClusterJobs.
// WorkerAt) off the reactor and the action posted to the coordinator
// that has it (ClusterJobs.Ask), which carries it out as its own
// operator's (actForPeer) and answers. The ACTED says, per target, what
// happened: carried out here or there (counted in affected, that
// coordinator's refusals prefixed "on coordinator C: "), posted there
// with no answer in time, on a coordinator that is dead (its sweep
// returns its jobs to the queue), or on none.

// workerIDs is the ids of the workers this coordinator has sessions with.
func (cl *cluster) workerIDs() []string {
	ids := make([]string, 0, len(cl.sess.peer))
	for _, p := range cl.sess.peer {
		if p.role == wire.RoleWorker {
			ids = append(ids, p.id)
		}
	}
	return ids
}

// hasWorker reports whether worker w has a live session here.
func (cl *cluster) hasWorker(w string) bool {
	_, ok := cl.sess.owners[ownerKey{wire.RoleWorker, w}]
	return ok
}

// splitWorkers splits an action on workers into the one on the workers
// with a live session here (local) and the targets without (others).
func (cl *cluster) splitWorkers(a admin.Action) (local admin.Action, others []string) {
	local = a
	local.Targets = nil
	for _, t := range a.Targets {
		if cl.hasWorker(t) {
			local.Targets = append(local.Targets, t)
		} else {
			others = append(others, t)
		}
	}
	return local, others
}

// isWorkerAction reports whether a names workers.
func isWorkerAction(k admin.ActionKind) bool {
	return k == admin.ActEvict || k == admin.ActDrain || k == admin.ActUndrain
}

// clusterWorkerAct answers an evict, drain or undrain on a Redis Cluster
// store (ident and req address the ACTED): the targets with a session
// here at once, the others asked of the coordinators that have them, off
// the reactor.
func (cl *cluster) clusterWorkerAct(ident []byte, req uint64, now time.Time, a admin.Action) {
	cj := cl.cj
	local, elsewhere := cl.splitWorkers(a)
	var res admin.ActionResult
	if len(local.Targets) > 0 {
		var err error
		if res, err = cl.c.Act(now, local); err != nil {
			cl.out.reject(onAdmin, ident, req, errorCode(err), "%v", err)
			return
		}
	}
	if len(elsewhere) == 0 {
		cl.acted(ident, req, a, res)
		return
	}
	ask := func() func() {
		r := askWorkersElsewhere(cj, a.Kind, elsewhere)
		return func() {
			res.Affected += r.Affected
			res.Errors = append(res.Errors, r.Errors...)
			// The targets no other coordinator has: this one's answer
			// (a lost worker's record dropped, or no such worker).
			if len(r.unknown) > 0 {
				rest := a
				rest.Targets = r.unknown
				lr, err := cl.c.Act(cl.now(), rest)
				if err != nil {
					lr.Errors = append(lr.Errors, err.Error())
				}
				res.Affected += lr.Affected
				for _, e := range lr.Errors {
					res.Errors = append(res.Errors, e+" (nor on any other coordinator of the cluster)")
				}
			}
			cl.acted(ident, req, a, res)
		}
	}
	io := cl.reads
	switch {
	case io == nil: // before Run, in tests
		ask()()
	case io.posted >= clusterReadQueue:
		for _, t := range elsewhere {
			res.Errors = append(res.Errors, fmt.Sprintf("%s worker %q: not done: it has no session on this coordinator, and %d queries wait on the cluster already; retry later", a.Kind, t, io.posted))
		}
		cl.acted(ident, req, a, res)
	default:
		ident = append([]byte(nil), ident...)
		io.put(ask)
	}
}

// elsewhereResult is what the other coordinators did with an action on
// workers, and the targets none of them has.
type elsewhereResult struct {
	admin.ActionResult
	unknown []string
}

// askWorkersElsewhere (off the reactor) finds where each worker is and
// asks each live coordinator that has some of them to carry out kind on
// those, once for all of them.
func askWorkersElsewhere(cj ClusterJobs, kind admin.ActionKind, workers []string) elsewhereResult {
	var out elsewhereResult
	type place struct {
		peers   string
		workers []string
	}
	at := make(map[string]*place)
	var order []string
	for _, w := range workers {
		c, peers, alive, err := cj.WorkerAt(w)
		switch {
		case err != nil:
			out.Errors = append(out.Errors, fmt.Sprintf("%s worker %q: it has no session on this coordinator, and looking for it in the cluster failed: %v", kind, w, err))
		case c == "":
			out.unknown = append(out.unknown, w)
		case !alive:
			out.Errors = append(out.Errors, fmt.Sprintf("%s worker %q: not done: it was on coordinator %s%s, which is dead (its heartbeat expired): its session there is over, and its jobs go back to the cluster's queue with that coordinator's sweep", kind, w, c, peersOf(peers)))
		default:
			if at[c] == nil {
				at[c] = &place{peers: peers}
				order = append(order, c)
			}
			at[c].workers = append(at[c].workers, w)
		}
	}
	slices.Sort(order)
	for _, c := range order {
		p := at[c]
		res, err := cj.Ask(c, admin.Action{Kind: kind, Targets: p.workers})
		if err != nil {
			for _, w := range p.workers {
				out.Errors = append(out.Errors, fmt.Sprintf("%s worker %q: it is on coordinator %s%s; posted there: %v", kind, w, c, peersOf(p.peers), err))
			}
			continue
		}
		out.Affected += res.Affected
		for _, e := range res.Errors {
			out.Errors = append(out.Errors, "on coordinator "+c+": "+e)
		}
	}
	return out
}

// peersOf is " (ENDPOINT)" for a coordinator's peers endpoint, or "".
func peersOf(peers string) string {
	if peers == "" {
		return ""
	}
	return " (" + peers + ")"
}

// workersForPeer carries out another coordinator's evict, drain or
// undrain on the workers with a session here; the others are refused
// (the asker found them here as this coordinator last published them).
func (cl *cluster) workersForPeer(now time.Time, a admin.Action) admin.ActionResult {
	var res admin.ActionResult
	local, gone := cl.splitWorkers(a)
	for _, t := range gone {
		res.Errors = append(res.Errors, fmt.Sprintf("%s worker %q: this coordinator has no session with it (any more)", a.Kind, t))
	}
	if len(local.Targets) > 0 {
		r, err := cl.c.Act(now, local)
		if err != nil {
			r.Errors = append(r.Errors, err.Error())
		}
		res.Affected += r.Affected
		res.Errors = append(r.Errors, res.Errors...)
	}
	cl.log.Info("action from another coordinator", "kind", a.Kind, "targets", a.Targets, "affected", res.Affected, "errors", len(res.Errors))
	return res
}
