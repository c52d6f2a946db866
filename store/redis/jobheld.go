package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/admin"
)

// The jobs a coordinator holds, for the others' views (QUERY view jobs on
// any coordinator lists another's claimed jobs with their worker, since
// when, attempts): a job a coordinator claimed from the shared queue
// lives in its broker, not in Redis, so each coordinator publishes its
// first PublishedHeld jobs (dispatched and backing off first, then
// queued; the server picks them) into the hash PREFIX:coord:C:jobs
// (field: the key's fingerprint, hex; value: heldJob as JSON) with its
// summary, once per heartbeat. Only what changed since the last publish
// is written (HSET, HDEL), so a coordinator whose jobs stand still writes
// nothing but the hash's TTL; the hash expires forgetSummary after its
// coordinator stops publishing. The walks (jobview.go) read the fields of
// the leases a page lists (HMGET), so a page's cost stays bounded.

// PublishedHeld is how many of the jobs it holds a coordinator publishes.
const PublishedHeld = 1000

func (l *Ledger) heldJobsKey(c string) string { return l.cfg.Prefix + ":coord:" + c + ":jobs" }

// heldJob is a job a coordinator holds as it publishes it.
type heldJob struct {
	JobID     uint64     `json:"j"`
	State     string     `json:"s"`
	Worker    string     `json:"w,omitempty"`
	Attempts  int        `json:"a,omitempty"`
	Failures  int        `json:"f,omitempty"`
	Throttles int        `json:"t,omitempty"`
	Created   time.Time  `json:"c"`
	Updated   time.Time  `json:"u"`
	RetryAt   time.Time  `json:"r,omitzero"`
	LastError string     `json:"e,omitempty"`
	Reason    string     `json:"y,omitempty"`
	Wait      admin.Wait `json:"wt,omitempty"`
}

// heldNote is the jobs NoteJobs noted, and what the last publish wrote.
type heldNote struct {
	mu        sync.Mutex
	rows      []admin.JobRow    // noted, not yet published (nil: none since)
	published map[string]string // field -> value, as the hash holds them (nil: not known)
}

// NoteJobs notes the jobs this coordinator holds (rows of its jobs view,
// the first PublishedHeld kept), for its next summary.
func (v *JobView) NoteJobs(rows []admin.JobRow) {
	rows = rows[:min(len(rows), PublishedHeld)]
	if rows == nil {
		rows = []admin.JobRow{}
	}
	v.jobs.mu.Lock()
	v.jobs.rows = rows
	v.jobs.mu.Unlock()
}

// publishJobs writes what changed in the jobs noted since the last
// publish, and renews the hash's TTL.
func (v *JobView) publishJobs(ctx context.Context) error {
	n := &v.jobs
	n.mu.Lock()
	rows := n.rows
	n.rows = nil
	pub := n.published
	n.mu.Unlock()
	if rows == nil && pub == nil {
		return nil // nothing noted yet
	}
	l := v.l
	key := l.heldJobsKey(l.coord)
	var set []any
	var gone []string
	next := pub
	if rows != nil {
		next = make(map[string]string, len(rows))
		for i := range rows {
			r := &rows[i]
			e := r.LastError
			if len(e) > maxPublishedError {
				e = e[:maxPublishedError] + "…"
			}
			b, _ := json.Marshal(&heldJob{JobID: r.JobID, State: r.State, Worker: r.Worker, Attempts: r.Attempts, Failures: r.Failures,
				Throttles: r.Throttles, Created: r.Created, Updated: r.Updated, RetryAt: r.RetryAt, LastError: e, Reason: r.Reason, Wait: r.Wait})
			next[r.Key] = string(b)
			if pub[r.Key] != string(b) {
				set = append(set, r.Key, string(b))
			}
		}
		for f := range pub {
			if _, ok := next[f]; !ok {
				gone = append(gone, f)
			}
		}
	}
	pipe := l.rdb.Pipeline()
	if len(set) > 0 {
		pipe.HSet(ctx, key, set...)
	}
	if len(gone) > 0 {
		pipe.HDel(ctx, key, gone...)
	}
	kept := pipe.Expire(ctx, key, forgetSummary)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		n.mu.Lock()
		n.published = nil // unknown: written whole next time
		if n.rows == nil {
			n.rows = rows
		}
		n.mu.Unlock()
		return fmt.Errorf("redis job view: publishing the jobs this coordinator holds: %w", err)
	}
	if !kept.Val() && len(next) > 0 && len(set) < 2*len(next) {
		// The hash was gone (expired, lost in a failover): written whole.
		all := make([]any, 0, 2*len(next))
		for f, val := range next {
			all = append(all, f, val)
		}
		pipe := l.rdb.Pipeline()
		pipe.HSet(ctx, key, all...)
		pipe.Expire(ctx, key, forgetSummary)
		if _, err := pipe.Exec(ctx); err != nil {
			next = nil
		}
	}
	n.mu.Lock()
	n.published = next
	n.mu.Unlock()
	return nil
}

// heldJobs reads coordinator c's published jobs of the keys fps (hex).
func (k *walker) heldJobs(c string, fps []string) (map[string]heldJob, error) {
	if len(fps) == 0 {
		return nil, nil
	}
	l := k.v.l
	out := make(map[string]heldJob)
	for lo := 0; lo < len(fps); lo += walkChunk {
		part := fps[lo:min(lo+walkChunk, len(fps))]
		vals, err := l.rdb.HMGet(k.ctx, l.heldJobsKey(c), part...).Result()
		if err != nil && !isNil(err) {
			return nil, fmt.Errorf("reading the jobs coordinator %s holds: %w", c, err)
		}
		for i, x := range vals {
			s, _ := x.(string)
			var h heldJob
			if s != "" && json.Unmarshal([]byte(s), &h) == nil {
				out[part[i]] = h
			}
		}
	}
	return out, nil
}

// detail fills r, a job coordinator c claimed, from what c published of
// it: its worker, attempts, times, and in its reason what it is doing
// there (reason is claimedReason's).
func (h *heldJob) detail(r *admin.JobRow, reason string) {
	r.Worker, r.Attempts, r.Failures, r.Throttles = h.Worker, h.Attempts, h.Failures, h.Throttles
	r.Created, r.Updated, r.RetryAt, r.LastError = h.Created, h.Updated, h.RetryAt, h.LastError
	r.Wait = h.Wait // its coordinator's (jobwait.go)
	var what string
	switch h.State {
	case "dispatched":
		what = "running on worker " + h.Worker + " since " + h.Updated.UTC().Format(time.RFC3339)
	case "backoff":
		what = "backing off until " + h.RetryAt.UTC().Format(time.RFC3339)
	case "queued":
		what = "queued"
	default:
		what = h.State
	}
	what += " there (its job " + strconv.FormatUint(h.JobID, 10) + ")"
	if h.Reason != "" {
		what += ": " + h.Reason
	}
	r.Reason = reason + ": " + what
}
