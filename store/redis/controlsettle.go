package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"drover/admin"
)

// settleControls settles every action left in coordinator d's control
// and processing lists, d having died (why "died", its sweeper calls
// this) or stopped (why "stopped", d is this coordinator leaving): the
// targets of an evict, drain or undrain that are now connected to another
// live coordinator (as the summaries list their workers) are forwarded to
// it, one post per coordinator, with the same reply list, to be carried
// out and answered there; the others are answered as not done by d,
// saying what became of its jobs and workers. Each action is removed
// from its list once settled (after a failure the next try settles the
// rest), then the lists are deleted. It returns how many actions it
// answered and how many posts it forwarded.
func (l *Ledger) settleControls(ctx context.Context, d, why string) (answered, forwarded int, err error) {
	keys := []string{l.doingKey(d), l.controlKey(d)}
	var at map[string]string // worker -> the live coordinator it is on; read at the first worker action
	for _, k := range keys {
		raw, err := l.rdb.LRange(ctx, k, 0, -1).Result()
		if err != nil {
			return answered, forwarded, fmt.Errorf("redis control: reading coordinator %s's actions left: %w", d, err)
		}
		for _, s := range raw {
			var c control
			if json.Unmarshal([]byte(s), &c) != nil || c.Reply == "" {
				continue
			}
			rest := c.Action.Targets
			if isWorkerKind(c.Action.Kind) && len(rest) > 0 {
				if at == nil {
					if at, err = l.liveWorkers(ctx, d); err != nil {
						return answered, forwarded, err
					}
				}
				groups := make(map[string][]string)
				rest = nil
				for _, t := range c.Action.Targets {
					if nc, ok := at[t]; ok {
						groups[nc] = append(groups[nc], t)
					} else {
						rest = append(rest, t)
					}
				}
				for _, nc := range slices.Sorted(maps.Keys(groups)) {
					if err := l.forwardControl(ctx, c, d, nc, groups[nc]); err != nil {
						return answered, forwarded, err
					}
					forwarded++
				}
			}
			if len(rest) > 0 || len(c.Action.Targets) == 0 {
				a := c.Action
				a.Targets = rest
				marked, err := l.drainMarks(ctx, a)
				if err != nil {
					return answered, forwarded, err
				}
				if err := l.answer(ctx, c.Reply, answerMsg{ActionResult: notDone(d, why, a, marked), Covers: len(rest)}); err != nil {
					return answered, forwarded, err
				}
				answered++
			}
			if err := l.rdb.LRem(ctx, k, 1, s).Err(); err != nil {
				return answered, forwarded, fmt.Errorf("redis control: removing a settled action from coordinator %s's list: %w", d, err)
			}
		}
	}
	if err := l.rdb.Del(ctx, keys...).Err(); err != nil {
		return answered, forwarded, fmt.Errorf("redis control: deleting coordinator %s's control lists: %w", d, err)
	}
	return answered, forwarded, nil
}

// isWorkerKind reports whether actions of kind k name workers.
func isWorkerKind(k admin.ActionKind) bool {
	return k == admin.ActEvict || k == admin.ActDrain || k == admin.ActUndrain
}

// forwardControl posts action c, left by coordinator d, to coordinator nc for
// targets, with c's reply list: nc carries it out and answers the asker.
func (l *Ledger) forwardControl(ctx context.Context, c control, d, nc string, targets []string) error {
	c.Action.Targets = targets
	c.Via = append(slices.Clone(c.Via), d)
	b, err := json.Marshal(&c)
	if err != nil {
		return fmt.Errorf("redis control: encoding the action forwarded: %w", err)
	}
	pipe := l.rdb.Pipeline()
	pipe.RPush(ctx, l.controlKey(nc), b)
	pipe.Expire(ctx, l.controlKey(nc), controlKeep)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis control: forwarding %s of %d workers from coordinator %s to coordinator %s: %w", c.Action.Kind, len(targets), d, nc, err)
	}
	return nil
}

// liveWorkers maps each worker connected to a live coordinator other
// than d to that coordinator, as the summaries list them (the newest
// summary first); this coordinator's own workers as its reactor last
// noted them, fresher than its summary.
func (l *Ledger) liveWorkers(ctx context.Context, d string) (map[string]string, error) {
	var own *[]string
	except := []string{d}
	if v := l.jobView.Load(); v != nil && l.coord != d {
		if own = v.workersNoted(); own != nil {
			except = append(except, l.coord)
		}
	}
	listings, err := l.workerListings(ctx, except...)
	if err != nil {
		return nil, fmt.Errorf("redis control: finding where coordinator %s's workers went: %w", d, err)
	}
	at := make(map[string]string)
	for _, c := range listings {
		if !c.alive {
			break // the live ones come first
		}
		for _, w := range *c.s.Workers {
			if _, ok := at[w]; !ok {
				at[w] = c.id
			}
		}
	}
	if own != nil {
		for _, w := range *own {
			at[w] = l.coord
		}
	}
	return at, nil
}

// drainMarks reads, for a drain or undrain, which of its targets the
// cluster keeps drained (drained.go); nil for other actions.
func (l *Ledger) drainMarks(ctx context.Context, a admin.Action) (map[string]bool, error) {
	if a.Kind != admin.ActDrain && a.Kind != admin.ActUndrain || len(a.Targets) == 0 {
		return nil, nil
	}
	vals, err := l.rdb.HMGet(ctx, l.drainedKey(), a.Targets...).Result()
	if err != nil {
		return nil, fmt.Errorf("redis control: reading the drains kept of %d workers: %w", len(a.Targets), err)
	}
	m := make(map[string]bool, len(vals))
	for i, v := range vals {
		m[a.Targets[i]] = v != nil
	}
	return m, nil
}

// notDone is the answer to action a, which coordinator d did not carry
// out before it died or stopped (why); marked says which of a drain's or
// undrain's targets the cluster keeps drained.
func notDone(d, why string, a admin.Action, marked map[string]bool) admin.ActionResult {
	var then string
	switch {
	case a.Kind == admin.ActRequeue && why == "died":
		then = "its jobs went back to the cluster's queue with its sweep"
	case a.Kind == admin.ActRequeue:
		then = "it handed its jobs back to the cluster's queue"
	default:
		then = "its workers' sessions ended and their jobs went back to the cluster's queue, and no other live coordinator has this worker (as their summaries list their workers)"
	}
	var res admin.ActionResult
	for _, t := range a.Targets {
		target, after := "key "+t, ""
		if a.Kind != admin.ActRequeue {
			target = fmt.Sprintf("worker %q", t)
		}
		switch {
		case a.Kind == admin.ActDrain && marked[t]:
			after = "; it stays drained in the cluster: the coordinator it says HELLO to next drains it"
		case a.Kind == admin.ActDrain:
			after = ": drain it again once it connects"
		case a.Kind == admin.ActUndrain && marked[t]:
			after = "; the cluster keeps a drain of it (set since): undrain it again"
		case a.Kind == admin.ActUndrain:
			after = "; the cluster keeps no drain of it: it takes jobs when it connects again"
		case a.Kind == admin.ActEvict:
			after = ": evict it again once it connects"
		}
		res.Errors = append(res.Errors, fmt.Sprintf("%s %s: not done: coordinator %s %s before carrying it out; %s%s", a.Kind, target, d, why, then, after))
	}
	return res
}
