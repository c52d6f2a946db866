package server

import (
	"fmt"
	"slices"
	"strings"
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
// returns its jobs to the queue), or on none. A coordinator that dies or
// stops with such actions left forwards them to where their workers
// went (store/redis controlsettle.go).
//
// A drain is kept in the cluster by worker id (ClusterJobs.MarkDrained,
// before it is carried out; an undrain forgets it first): a drained
// worker whose coordinator dies before its jobs end stays drained on the
// coordinator it connects to next, which drains it as it says HELLO
// (workerHello), before any job. The coordinator that lets a drained
// worker go (its jobs ended) forgets its drain (drainEnded): drained
// means let go once, as on one coordinator. Nothing the worker says
// beyond its id, which its key holds, sets or clears a drain.

// workerState is the cluster part's state for the actions on workers:
// the workers let go once drained whose drains are still to be
// forgotten in the cluster, and whether a call doing so is in flight.
type workerState struct {
	letGo      []string
	forgetting bool
}

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
// store (ident and req address the ACTED). An evict of workers with a
// session here is answered at once. Otherwise, off the reactor, the
// targets without a session here are looked up in the cluster, and a
// drain kept (or an undrain's drains forgotten) there; then, on the
// reactor, the targets here are acted on; then, off the reactor again,
// the others asked of the coordinators that have them.
func (cl *cluster) clusterWorkerAct(ident []byte, req uint64, now time.Time, a admin.Action) {
	local, elsewhere := cl.splitWorkers(a)
	if a.Kind == admin.ActEvict && len(elsewhere) == 0 {
		res, err := cl.c.Act(now, local)
		if err != nil {
			cl.out.reject(onAdmin, ident, req, errorCode(err), "%v", err)
			return
		}
		cl.acted(ident, req, a, res)
		return
	}
	if lines, full := cl.readsFull(a.Kind, a.Targets); full {
		cl.acted(ident, req, a, admin.ActionResult{Errors: lines})
		return
	}
	ident = append([]byte(nil), ident...)
	cj := cl.cj
	cl.readLane(func() func() {
		p := planWorkers(cj, a.Kind, local.Targets, elsewhere)
		return func() { cl.workersHere(ident, req, a, local, p) }
	})
}

// readsFull reports whether the cluster's read lane has no room for an
// action on targets, with the line saying so for each.
func (cl *cluster) readsFull(kind admin.ActionKind, targets []string) ([]string, bool) {
	io := cl.reads
	if io == nil || io.posted < clusterReadQueue {
		return nil, false
	}
	lines := make([]string, len(targets))
	for i, t := range targets {
		lines[i] = fmt.Sprintf("%s worker %q: not done: the cluster must be asked about it, and %d queries wait on the cluster already; retry later", kind, t, io.posted)
	}
	return lines, true
}

// readLane hands call to the cluster's read lane (at once before Run, in
// tests); the caller checked readsFull.
func (cl *cluster) readLane(call func() func()) {
	if cl.reads == nil {
		call()()
		return
	}
	cl.reads.put(call)
}

// workersHere carries out, on the reactor, the part of action a on the
// workers with a session here when asked (local) and on those no
// coordinator has (this one's answer: a lost worker's record dropped, or
// no such worker), then asks the coordinators that have the others.
func (cl *cluster) workersHere(ident []byte, req uint64, a, local admin.Action, p workerPlan) {
	now := cl.now()
	var res admin.ActionResult
	if len(local.Targets) > 0 {
		res = cl.actHere(now, local)
	}
	res.Errors = append(res.Errors, p.lines...)
	rest := admin.Action{Kind: a.Kind}
	for _, w := range p.unknown {
		if a.Kind == admin.ActUndrain && p.unmarked[w] {
			res.Errors = append(res.Errors, fmt.Sprintf("undrain worker %q: no coordinator has a session with it; the drain the cluster kept of it is forgotten: it takes jobs when it connects", w))
			continue
		}
		rest.Targets = append(rest.Targets, w)
	}
	if len(rest.Targets) > 0 {
		r := cl.actHere(now, rest)
		res.Affected += r.Affected
		for _, e := range r.Errors {
			res.Errors = append(res.Errors, e+" (nor on any other coordinator of the cluster)")
		}
	}
	if len(p.order) == 0 {
		cl.acted(ident, req, a, res)
		return
	}
	var asked []string
	for _, c := range p.order {
		asked = append(asked, p.at[c]...)
	}
	if lines, full := cl.readsFull(a.Kind, asked); full {
		res.Errors = append(res.Errors, lines...)
		cl.acted(ident, req, a, res)
		return
	}
	cj := cl.cj
	cl.readLane(func() func() {
		r := askWorkersElsewhere(cj, a.Kind, p)
		return func() {
			res.Affected += r.Affected
			res.Errors = append(res.Errors, r.Errors...)
			cl.acted(ident, req, a, res)
		}
	})
}

// workerPlan is where an action's targets without a session here are
// (off the reactor): the live coordinators that have some (at, in
// order, with their peers endpoints), the targets no coordinator has
// (unknown), the lines of the others (on a dead coordinator, not found),
// and, for an undrain, which targets the cluster kept a drain of.
type workerPlan struct {
	at       map[string][]string
	peers    map[string]string
	order    []string
	unknown  []string
	lines    []string
	unmarked map[string]bool
}

// planWorkers (off the reactor) finds where each of the targets without
// a session here is, and keeps a drain in the cluster (of every target
// a coordinator has, live or dead: the coordinator it connects to next
// honours it), or forgets an undrain's.
func planWorkers(cj ClusterJobs, kind admin.ActionKind, local, elsewhere []string) workerPlan {
	p := workerPlan{at: make(map[string][]string), peers: make(map[string]string)}
	type deadAt struct{ w, c, peers string }
	var dead []deadAt
	known := slices.Clone(local)
	for _, w := range elsewhere {
		c, peers, alive, err := cj.WorkerAt(w)
		switch {
		case err != nil:
			p.lines = append(p.lines, fmt.Sprintf("%s worker %q: it has no session on this coordinator, and looking for it in the cluster failed: %v", kind, w, err))
		case c == "":
			p.unknown = append(p.unknown, w)
		case !alive:
			dead = append(dead, deadAt{w, c, peers})
			known = append(known, w)
		default:
			if p.at[c] == nil {
				p.peers[c] = peers
				p.order = append(p.order, c)
			}
			p.at[c] = append(p.at[c], w)
			known = append(known, w)
		}
	}
	slices.Sort(p.order)
	kept := make(map[string]bool)
	switch kind {
	case admin.ActDrain:
		refused, err := cj.MarkDrained(known)
		for _, w := range known {
			switch {
			case err != nil:
				p.lines = append(p.lines, fmt.Sprintf("drain worker %q: keeping its drain in the cluster failed (%v): drained only where it is connected now", w, err))
			case slices.Contains(refused, w):
				p.lines = append(p.lines, fmt.Sprintf("drain worker %q: its drain not kept in the cluster, which keeps as many drained workers as it may already: drained only where it is connected now", w))
			default:
				kept[w] = true
			}
		}
	case admin.ActUndrain:
		all := append(slices.Clone(local), elsewhere...)
		had, err := cj.UnmarkDrained(all)
		if err != nil {
			for _, w := range all {
				p.lines = append(p.lines, fmt.Sprintf("undrain worker %q: forgetting the drain the cluster keeps of it failed (%v): the coordinator it connects to next may drain it again", w, err))
			}
		}
		p.unmarked = make(map[string]bool)
		for i, h := range had {
			p.unmarked[all[i]] = h
		}
	}
	for _, d := range dead {
		line := fmt.Sprintf("%s worker %q: not done: it was on coordinator %s%s, which is dead (stopped, or its heartbeat expired): its session there is over, and its jobs go back to the cluster's queue (a stopped coordinator handed them back, a dead one's are swept)", kind, d.w, d.c, peersOf(d.peers))
		switch {
		case kind == admin.ActDrain && kept[d.w]:
			line += "; it stays drained in the cluster: the coordinator it says HELLO to next drains it"
		case kind == admin.ActUndrain && p.unmarked[d.w]:
			line += "; the drain the cluster kept of it is forgotten: it takes jobs when it connects again"
		}
		p.lines = append(p.lines, line)
	}
	return p
}

// askWorkersElsewhere (off the reactor) asks each live coordinator of
// plan p that has some of the targets to carry out kind on those, once
// for all of them.
func askWorkersElsewhere(cj ClusterJobs, kind admin.ActionKind, p workerPlan) admin.ActionResult {
	var out admin.ActionResult
	for _, c := range p.order {
		res, err := cj.Ask(c, admin.Action{Kind: kind, Targets: p.at[c]})
		if err != nil {
			for _, w := range p.at[c] {
				out.Errors = append(out.Errors, fmt.Sprintf("%s worker %q: it is on coordinator %s%s; posted there: %v", kind, w, c, peersOf(p.peers[c]), err))
			}
			continue
		}
		out.Affected += res.Affected
		out.Errors = append(out.Errors, res.Errors...) // prefixed "on coordinator C: " by Ask
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

// actHere carries out action a on this coordinator, its error, if any,
// one more line of the result.
func (cl *cluster) actHere(now time.Time, a admin.Action) admin.ActionResult {
	res, err := cl.c.Act(now, a)
	if err != nil {
		res.Errors = append(res.Errors, err.Error())
	}
	return res
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
		r := cl.actHere(now, local)
		res.Affected += r.Affected
		res.Errors = append(r.Errors, res.Errors...)
	}
	cl.log.Info("action from another coordinator", "kind", a.Kind, "targets", a.Targets, "affected", res.Affected, "errors", len(res.Errors))
	return res
}

// workerHello drains, as it says HELLO, a worker the cluster keeps
// drained (ClusterJobs.Drained: an operator drained it, and it was not
// let go since), before any job is dispatched to it. Its id is the one
// its key holds; nothing else it says matters.
func (cl *cluster) workerHello(now time.Time, w string) {
	if cl.cj == nil || !cl.cj.Drained(w) {
		return
	}
	if res := cl.actHere(now, admin.Action{Kind: admin.ActDrain, Targets: []string{w}}); len(res.Errors) > 0 {
		cl.log.Warn("draining a worker the cluster keeps drained as it connected", "worker", w, "err", strings.Join(res.Errors, "; "))
		return
	}
	cl.log.Info("worker the cluster keeps drained drained as it connected", "worker", w)
	cl.adm.dirty = true
}

// drainEnded forgets, in the cluster, the drain of worker w, let go here
// once drained (its jobs ended): on the write lane, one call in flight,
// the workers let go meanwhile after it.
func (cl *cluster) drainEnded(w string) {
	if cl.cj == nil {
		return
	}
	cl.wk.letGo = append(cl.wk.letGo, w)
	cl.forgetDrains()
}

func (cl *cluster) forgetDrains() {
	if cl.wk.forgetting || len(cl.wk.letGo) == 0 {
		return
	}
	ws := cl.wk.letGo
	cl.wk.letGo, cl.wk.forgetting = nil, true
	cj, log := cl.cj, cl.log
	cl.post(func() func() {
		_, err := cj.UnmarkDrained(ws)
		return func() {
			cl.wk.forgetting = false
			if err != nil {
				log.Warn("forgetting, in the cluster, the drains of workers let go (each is forgotten within a day)", "workers", ws, "err", err)
			}
			cl.forgetDrains()
		}
	})
}
