package redis

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"

	"drover/admin"
	"drover/coord/id"
)

// The cluster's jobs for the admin views (QUERY view jobs and waiters on
// any coordinator, net/server's clusterjobs.go): the jobs this
// coordinator does not hold, read where the queue keeps them (queue.go),
// a page at a time.
//
// A walk lists, in this order, the jobs other coordinators claimed (each
// coordinator by id, the hosts it touched as SSCAN gives them, each
// host's leases by fingerprint), then the jobs waiting in the shared
// queue (the ready hosts as SSCAN gives them, each host's queue oldest
// first, then its polite queue), then, when asked, the keys requested on
// the hosts this coordinator never touched (the others' are its own
// view's). Its position is a cursor (opaque text): the part, the
// coordinator, the SSCAN cursor of the batch of hosts, the host, the list
// and the index in it. A page does bounded work: it reads at most
// walkScans batches of hosts and examines at most walkExamined entries,
// then answers with what it found and the cursor to go on from. Like
// SCAN, a walk over a changing queue may miss a job that moved (claimed,
// returned) while it went, or list it twice; nothing is locked.

// The parts of a walk.
const (
	PartClaimed   = "c" // jobs other coordinators claimed
	PartQueued    = "q" // jobs in the shared queue
	PartRequested = "r" // keys requested on hosts this coordinator never touched
)

// walkParts is the walk's order.
var walkParts = []string{PartClaimed, PartQueued, PartRequested}

// The bounds of one page of a walk.
const (
	walkBatch    = 256  // hosts an SSCAN asks for
	walkScans    = 32   // SSCANs a page sends at most
	walkExamined = 5000 // entries a page examines at most
	walkChunk    = 512  // entries an LRANGE reads at most
)

// JobView reads the cluster's jobs for the admin views. Host and NoteHeld
// read the ledger's state: call them on the reactor's goroutine, like the
// ledger; the other methods read Redis only and are safe from any
// goroutine (net/server calls them off the reactor).
type JobView struct {
	l *Ledger
	// held is the hosts this coordinator holds claimed jobs of, as
	// NoteHeld last saw them, for its summary.
	held atomic.Pointer[[]string]
	// retries is this coordinator's retries note, for its summary
	// (jobretries.go).
	retries atomic.Pointer[retriesNote]
	// jobs is the jobs it holds, noted for publishing (jobheld.go).
	jobs heldNote
	// workers is the ids of the workers it has sessions with, noted
	// for its summary (workers.go).
	workers atomic.Pointer[[]string]
	// reread: Requests read the processing list (control.go).
	reread atomic.Bool
	// hostOf remembers the host of the keys the walks listed, so a
	// query or an action naming a key by fingerprint finds its keys
	// (bounded: forgotten all at once when full); mu guards it.
	mu     sync.Mutex
	hostOf map[id.Fingerprint]string
}

// hostMemo bounds JobView.hostOf.
const hostMemo = 1 << 16

// JobView returns the cluster's job lists for l's coordinator (the same
// each call).
func (l *Ledger) JobView() *JobView {
	if v := l.jobView.Load(); v != nil {
		return v
	}
	v := &JobView{l: l, hostOf: make(map[id.Fingerprint]string)}
	l.jobView.Store(v)
	return v
}

// maxHeldHosts bounds the hosts a summary lists.
const maxHeldHosts = 4096

// NoteHeld notes the hosts this coordinator holds claimed jobs of, for
// its next summary: the other coordinators' walks read their leases on
// those hosts only (jobs claimed since are listed after the next note).
// Call it on the reactor's goroutine (it reads the queue), about once a
// second.
func (v *JobView) NoteHeld() {
	q := v.l.queue
	hosts := []string{}
	if q != nil {
		seen := make(map[string]bool)
		for _, h := range q.held {
			if !seen[h] && len(hosts) < maxHeldHosts {
				seen[h] = true
				hosts = append(hosts, h)
			}
		}
		for h := range q.unsure { // a lost claim's leases
			if !seen[h] && len(hosts) < maxHeldHosts {
				seen[h] = true
				hosts = append(hosts, h)
			}
		}
	}
	if q != nil && len(hosts) == maxHeldHosts && len(q.held)+len(q.unsure) > maxHeldHosts {
		v.held.Store(nil) // too many to list: the others walk every host it touched
		return
	}
	slices.Sort(hosts)
	v.held.Store(&hosts)
}

// Self is this coordinator's id in the cluster.
func (v *JobView) Self() string { return v.l.coord }

func (v *JobView) remember(fp id.Fingerprint, host string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.hostOf) >= hostMemo {
		clear(v.hostOf)
	}
	v.hostOf[fp] = host
}

// walkPos is a walk's position, as its cursor says.
type walkPos struct {
	Part  string `json:"p"`
	Coord string `json:"c,omitempty"` // PartClaimed: the coordinator
	Scan  uint64 `json:"s,omitempty"` // the SSCAN cursor of the batch holding Host
	Host  string `json:"h,omitempty"` // the host to go on at ("": the batch's first)
	List  int    `json:"l,omitempty"` // the host's list (0, 1: queue, polite queue; leases likewise)
	Index int64  `json:"i,omitempty"` // the entry in it
}

func (p walkPos) cursor() string {
	b, _ := json.Marshal(&p)
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseCursor(s string) (walkPos, error) {
	var p walkPos
	if s == "" {
		return p, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if err == nil && !slices.Contains(walkParts, p.Part) {
		err = fmt.Errorf("part %q", p.Part)
	}
	if err != nil || p.Index < 0 || p.List < 0 || p.List > 1 {
		return walkPos{}, fmt.Errorf("cursor %.40q: not one a page of this view gave (%v)", s, err)
	}
	return p, nil
}

// walk is one page's request (see JobView.Jobs).
type walk struct {
	parts string
	host  func(string) bool
	match func(*admin.JobRow) bool
	skip  int
	limit int
}

// window is one page of a walk.
type window struct {
	rows    []admin.JobRow
	skipped int
	next    string
}

// walker is one page of a walk under way.
type walker struct {
	v        *JobView
	ctx      context.Context
	w        walk
	out      window
	examined int
	scans    int
	sums     map[string]summary // the coordinators' summaries, by id
	polite   map[string]bool    // the hosts their claims found at their politeness cap (jobwait.go)
}

// full reports whether the page has its rows or has done its work.
func (k *walker) full() bool {
	return len(k.out.rows) >= k.w.limit || k.examined >= walkExamined || k.scans >= walkScans
}

// take offers a row: skipped, listed or passed over; it reports whether
// the page is full after it.
func (k *walker) take(r *admin.JobRow) bool {
	k.examined++
	if k.w.match != nil && !k.w.match(r) {
		return k.full()
	}
	if k.out.skipped < k.w.skip {
		k.out.skipped++
		return k.full()
	}
	if fp, err := id.ParseFingerprint(r.Key); err == nil {
		k.v.remember(fp, id.Host(r.URL))
	}
	k.out.rows = append(k.out.rows, *r)
	return k.full()
}

// Jobs lists a page of the walk from cursor ("": the start; see the
// comment at the top): the rows of the parts named in parts (the letters
// of PartClaimed, PartQueued, PartRequested) on the hosts host takes (nil:
// all; a job's host is its URL's, as every submit makes it) that match
// (nil: all), the first skip of them passed over, at most limit. It
// returns the rows, how many were passed over (skip, or fewer when the
// page's work ran out first) and the cursor to go on from ("": the walk
// has ended).
func (v *JobView) Jobs(cursor, parts string, host func(string) bool, match func(*admin.JobRow) bool, skip, limit int) (rows []admin.JobRow, skipped int, next string, err error) {
	pos, err := parseCursor(cursor)
	if err != nil {
		return nil, 0, "", err
	}
	if limit <= 0 { // where the walk is: at its start when it has not begun
		if cursor == "" {
			for _, p := range walkParts {
				if strings.Contains(parts, p) {
					return nil, 0, walkPos{Part: p}.cursor(), nil
				}
			}
		}
		return nil, 0, cursor, nil
	}
	ctx, cancel := v.l.ctx()
	defer cancel()
	k := &walker{v: v, ctx: ctx, w: walk{parts: parts, host: host, match: match, skip: skip, limit: limit}}
	if pos.Part == "" {
		pos.Part = PartClaimed
	}
	for i := slices.Index(walkParts, pos.Part); i < len(walkParts); i++ {
		part := walkParts[i]
		if part != pos.Part {
			pos = walkPos{Part: part}
		}
		if !strings.Contains(parts, part) {
			continue
		}
		var at walkPos
		var more bool
		switch part {
		case PartClaimed:
			at, more, err = k.claimed(pos)
		case PartQueued:
			at, more, err = k.hosts(pos, v.l.readyKey(), k.queued)
		case PartRequested:
			at, more, err = k.hosts(pos, v.l.cfg.Prefix+":hosts", k.requested)
		}
		if err != nil {
			return k.out.rows, k.out.skipped, "", fmt.Errorf("redis job view: %w", err)
		}
		if more {
			return k.out.rows, k.out.skipped, at.cursor(), nil
		}
	}
	return k.out.rows, k.out.skipped, "", nil
}

// claimed walks the other coordinators' leases from pos, coordinator by
// coordinator (by id); more says the page ended before the part did.
func (k *walker) claimed(pos walkPos) (walkPos, bool, error) {
	l := k.v.l
	ids, err := l.rdb.SMembers(k.ctx, l.liveSet()).Result()
	if err != nil {
		return pos, false, fmt.Errorf("reading the coordinators: %w", err)
	}
	slices.SortFunc(ids, compareIDs)
	for _, c := range ids {
		if c == l.coord || pos.Coord != "" && !coordAfter(c, pos.Coord) {
			continue
		}
		if c != pos.Coord {
			pos = walkPos{Part: PartClaimed, Coord: c}
		}
		var next walkPos
		var more bool
		var err error
		if held, ok := k.heldBy(c); ok {
			next, more, err = k.heldLeases(c, pos, held)
		} else {
			next, more, err = k.hosts(pos, l.hostsKey(c), func(p walkPos, hosts []string) (walkPos, bool, error) {
				return k.leases(c, p, hosts)
			})
		}
		if err != nil || more {
			next.Coord = c
			return next, more, err
		}
		if k.full() {
			return walkPos{Part: PartClaimed, Coord: nextCoord(ids, c, l.coord)}, nextCoord(ids, c, l.coord) != "", nil
		}
	}
	return pos, false, nil
}

// compareIDs orders coordinator ids by number.
func compareIDs(a, b string) int {
	x, _ := strconv.ParseInt(a, 10, 64)
	y, _ := strconv.ParseInt(b, 10, 64)
	return cmp.Or(cmp.Compare(x, y), strings.Compare(a, b))
}

// coordAfter reports whether coordinator c comes at or after d in the
// walk's order (numeric ids).
func coordAfter(c, d string) bool {
	x, _ := strconv.ParseInt(c, 10, 64)
	y, _ := strconv.ParseInt(d, 10, 64)
	return x > y || x == y && c >= d
}

// nextCoord is the coordinator after c in ids, not self ("": none).
func nextCoord(ids []string, c, self string) string {
	for i := slices.Index(ids, c) + 1; i < len(ids); i++ {
		if ids[i] != self {
			return ids[i]
		}
	}
	return ""
}

// hosts walks the hosts of set from pos, a batch at a time, handing each
// batch (from pos.Host on, in the first) to visit; more says the page
// ended before the set did.
func (k *walker) hosts(pos walkPos, set string, visit func(walkPos, []string) (walkPos, bool, error)) (walkPos, bool, error) {
	l := k.v.l
	for {
		if k.scans >= walkScans || k.full() {
			return pos, true, nil
		}
		k.scans++
		batch, next, err := l.rdb.SScan(k.ctx, set, pos.Scan, "", walkBatch).Result()
		if err != nil {
			return pos, false, fmt.Errorf("reading the hosts of %s: %w", set, err)
		}
		slices.Sort(batch)
		batch = slices.Compact(batch)
		if pos.Host != "" {
			if i, ok := slices.BinarySearch(batch, pos.Host); ok {
				batch = batch[i:]
			} else {
				pos.List, pos.Index = 0, 0 // the set changed: the batch from its start
			}
		}
		batch, at := k.wanted(pos, batch)
		at, more, err := visit(at, batch)
		if err != nil || more {
			at.Part, at.Scan = pos.Part, pos.Scan
			return at, true, err
		}
		if next == 0 {
			return pos, false, nil
		}
		pos = walkPos{Part: pos.Part, Coord: pos.Coord, Scan: next}
	}
}

// wanted keeps the hosts of batch the walk's host test takes (all
// without one), and resets pos's list and index unless the first is
// still pos.Host (they are that host's).
func (k *walker) wanted(pos walkPos, batch []string) ([]string, walkPos) {
	if k.w.host != nil {
		batch = slices.DeleteFunc(slices.Clone(batch), func(h string) bool { return !k.w.host(h) })
	}
	if len(batch) == 0 || batch[0] != pos.Host {
		pos.List, pos.Index = 0, 0
	}
	return batch, pos
}

// queued lists the shared queue's entries of hosts, from pos.List and
// pos.Index of the first.
func (k *walker) queued(pos walkPos, hosts []string) (walkPos, bool, error) {
	l := k.v.l
	lists := [2]string{"jq", "pq"}
	waits, err := k.hostWaits(hosts) // jobwait.go
	if err != nil {
		return pos, false, err
	}
	var lens [][2]*goredis.IntCmd
	if k.w.match == nil && k.out.skipped < k.w.skip {
		// Nothing to look at while skipping: whole lists by their length.
		pipe := l.rdb.Pipeline()
		lens = make([][2]*goredis.IntCmd, len(hosts))
		for i, h := range hosts {
			lens[i] = [2]*goredis.IntCmd{pipe.LLen(k.ctx, l.pre(h)+lists[0]), pipe.LLen(k.ctx, l.pre(h)+lists[1])}
		}
		if _, err := pipe.Exec(k.ctx); err != nil {
			return pos, false, fmt.Errorf("reading the queues' lengths: %w", err)
		}
	}
	for i, h := range hosts {
		first := i == 0
		for li := range 2 {
			if first && li < pos.List {
				continue
			}
			from := int64(0)
			if first && li == pos.List {
				from = pos.Index
			}
			if lens != nil {
				n := lens[i][li].Val() - from
				if left := int64(k.w.skip - k.out.skipped); n > 0 && n <= left {
					k.out.skipped += int(n)
					continue
				}
			}
			for {
				if k.full() {
					return walkPos{Host: h, List: li, Index: from}, true, nil
				}
				want := int64(min(walkChunk, walkExamined-k.examined, k.w.skip-k.out.skipped+k.w.limit-len(k.out.rows)))
				es, err := l.rdb.LRange(k.ctx, l.pre(h)+lists[li], from, from+max(want, 1)-1).Result()
				if err != nil {
					return pos, false, fmt.Errorf("reading host %q's queue: %w", h, err)
				}
				for j, e := range es {
					r, ok := entryRow(e, "queued", "", "in the cluster's queue, for any coordinator to claim")
					k.queuedWait(&r, h, li == 1, waits[h])
					if ok && k.take(&r) {
						return walkPos{Host: h, List: li, Index: from + int64(j) + 1}, true, nil
					}
				}
				from += int64(len(es))
				if int64(len(es)) < max(want, 1) {
					break
				}
			}
		}
	}
	return pos, false, nil
}

// leases lists coordinator c's leased entries of hosts, each host's by
// fingerprint, from pos.List and pos.Index of the first, each with what c
// published of it (jobheld.go).
func (k *walker) leases(c string, pos walkPos, hosts []string) (walkPos, bool, error) {
	l := k.v.l
	pipe := l.rdb.Pipeline()
	cmds := make([][2]*goredis.MapStringStringCmd, len(hosts))
	for i, h := range hosts {
		cmds[i] = [2]*goredis.MapStringStringCmd{pipe.HGetAll(k.ctx, l.pre(h)+"jl:"+c), pipe.HGetAll(k.ctx, l.pre(h)+"pl:"+c)}
	}
	if _, err := pipe.Exec(k.ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return pos, false, fmt.Errorf("reading coordinator %s's leases: %w", c, err)
	}
	// The entries the page may list, in the walk's order (at most what
	// it has left to examine).
	type lease struct {
		host  string
		list  int
		index int
		fp, e string
	}
	var es []lease
	var fps []string
	var rest *walkPos // the first entry not collected
	left := walkExamined - k.examined
	for i, h := range hosts {
		for li := range 2 {
			if i == 0 && li < pos.List {
				continue
			}
			m := cmds[i][li].Val()
			keys := make([]string, 0, len(m))
			for fp := range m {
				keys = append(keys, fp)
			}
			slices.Sort(keys)
			from := 0
			if i == 0 && li == pos.List {
				from = int(min(pos.Index, int64(len(keys))))
			}
			for j := from; j < len(keys) && rest == nil; j++ {
				if len(es) == left {
					rest = &walkPos{Host: h, List: li, Index: int64(j)}
					break
				}
				es = append(es, lease{host: h, list: li, index: j, fp: keys[j], e: m[keys[j]]})
				fps = append(fps, keys[j])
			}
		}
	}
	held, err := k.heldJobs(c, fps)
	if err != nil {
		return pos, false, err
	}
	reason := k.claimedReason(c)
	for _, x := range es {
		if k.full() {
			return walkPos{Host: x.host, List: x.list, Index: int64(x.index)}, true, nil
		}
		r, ok := entryRow(x.e, "claimed", c, reason+": queued, running or backing off there")
		if h, found := held[x.fp]; ok && found {
			h.detail(&r, reason)
		}
		if ok && k.take(&r) {
			return walkPos{Host: x.host, List: x.list, Index: int64(x.index) + 1}, true, nil
		}
	}
	if rest != nil {
		return *rest, true, nil
	}
	return pos, false, nil
}

// claimedReason is the reason of a job coordinator c claimed, up to what
// it does with it.
func (k *walker) claimedReason(c string) string {
	reason := "claimed by coordinator " + c
	if p := k.peer(c); p != "" {
		reason += " (" + p + ")"
	}
	return reason
}

// summaryOf is coordinator c's summary, read once per page (ok false:
// none).
func (k *walker) summaryOf(c string) (summary, bool) {
	if k.sums == nil {
		k.sums = make(map[string]summary)
		all, _ := k.v.l.rdb.HGetAll(k.ctx, k.v.l.summariesKey()).Result()
		for cid, js := range all {
			var s summary
			if json.Unmarshal([]byte(js), &s) == nil {
				k.sums[cid] = s
			}
		}
	}
	s, ok := k.sums[c]
	return s, ok
}

// peer is coordinator c's peers endpoint as its summary says ("": not
// known).
func (k *walker) peer(c string) string {
	s, _ := k.summaryOf(c)
	return s.Peers
}

// heldBy is the hosts coordinator c holds claimed jobs of, sorted, as its
// summary lists them (ok false: it does not list them).
func (k *walker) heldBy(c string) ([]string, bool) {
	s, ok := k.summaryOf(c)
	if !ok || s.Held == nil {
		return nil, false
	}
	held := slices.Clone(*s.Held)
	slices.Sort(held)
	return slices.Compact(held), true
}

// heldLeases walks coordinator c's leases on the hosts it holds jobs of
// (held, sorted) from pos, walkBatch hosts a step; more says the page
// ended before the hosts did.
func (k *walker) heldLeases(c string, pos walkPos, held []string) (walkPos, bool, error) {
	i := 0
	if pos.Host != "" {
		var found bool
		if i, found = slices.BinarySearch(held, pos.Host); !found {
			pos.List, pos.Index = 0, 0
		}
	}
	for i < len(held) {
		if k.full() || k.scans >= walkScans {
			at := pos
			if held[i] != pos.Host {
				at.List, at.Index = 0, 0
			}
			at.Host = held[i]
			return at, true, nil
		}
		k.scans++
		batch := held[i:min(i+walkBatch, len(held))]
		i += len(batch)
		batch, at := k.wanted(pos, batch)
		at, more, err := k.leases(c, at, batch)
		if err != nil || more {
			at.Part, at.Coord = PartClaimed, c
			return at, more, err
		}
		pos = walkPos{Part: PartClaimed, Coord: c}
	}
	return pos, false, nil
}

// entryRow makes a job row of a queue entry ("FP JSON").
func entryRow(e, state, coordinator, reason string) (admin.JobRow, bool) {
	fps, js, ok := strings.Cut(e, " ")
	if !ok {
		return admin.JobRow{}, false
	}
	var je jobEntry
	if json.Unmarshal([]byte(js), &je) != nil {
		return admin.JobRow{}, false
	}
	return admin.JobRow{Key: fps, Crawler: je.Crawler, Processor: je.Processor, URL: je.URL, State: state,
		QueueID: je.ID, Coordinator: coordinator, Reason: reason}, true
}
