package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// The shared queue's cluster-wide counts, kept exact: every queue.lua
// run that moves jobs into or out of a host's queues, or ends their
// leases, adds its change to a stats hash on the host's own slot in the
// same script, so a count never differs from the lists it counts, whatever
// fails between two round trips (a coordinator SIGKILLed between a claim
// and its count, a reply lost and the call sent again). A script may only
// touch keys of its one slot, so the counts are per slot, not per cluster:
//
//   - PREFIX:{T}:stats  hash, one per Redis Cluster slot the queue used
//     (T a tag that hashes to that slot, slotTag): q the jobs in the
//     slot's hosts' queues, d and f the jobs their coordinators finished
//     done and failed, and s:C the number of coordinator C's last finish
//     counted there (so a finish sent again after its reply was lost is
//     not counted twice).
//   - PREFIX:statslots  set: the slots whose stats hash may exist, each
//     added before the first script that writes its hash.
//
// The cluster view (summary.go) sums the hashes of PREFIX:statslots.

func (l *Ledger) statSlotsKey() string { return l.cfg.Prefix + ":statslots" }

// statsKey is the stats hash of host's slot.
func (l *Ledger) statsKey(host string) string {
	return l.slotStatsKey(keySlot(l.pre(host)))
}

func (l *Ledger) slotStatsKey(slot int) string {
	return l.cfg.Prefix + ":{" + slotTag(slot) + "}:stats"
}

// keySlot is the Redis Cluster slot of key: CRC16 (XMODEM) of its hash tag
// (what is between its first "{" and the next "}", if not empty), else of
// the whole key, modulo 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key)) & (slots - 1)
}

const slots = 16384

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0), the one Redis
// Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

var (
	tagsOnce sync.Once
	tags     []string
)

// slotTag is a short hash tag of slot s: the first base-36 number whose
// CRC16 falls on s.
func slotTag(s int) string {
	tagsOnce.Do(func() {
		tags = make([]string, slots)
		left := slots
		for i := 0; left > 0; i++ {
			t := strconv.FormatInt(int64(i), 36)
			if k := int(crc16(t)) & (slots - 1); tags[k] == "" {
				tags[k] = t
				left--
			}
		}
	})
	return tags[s]
}

// registerSlots adds to PREFIX:statslots the slots of hosts not yet known
// to be there, before a script writes their stats: the cluster view then
// finds every slot with counts, whichever coordinator wrote them.
func (l *Ledger) registerSlots(ctx context.Context, hosts []string) error {
	var fresh []any
	for _, h := range hosts {
		s := keySlot(l.pre(h))
		if l.statSlots[s] {
			continue
		}
		l.statSlots[s] = true
		fresh = append(fresh, s)
	}
	if len(fresh) == 0 {
		return nil
	}
	if err := l.rdb.SAdd(ctx, l.statSlotsKey(), fresh...).Err(); err != nil {
		for _, s := range fresh {
			delete(l.statSlots, s.(int))
		}
		return fmt.Errorf("redis queue: registering %d slots' counts: %w", len(fresh), err)
	}
	return nil
}

// queueTotals are the shared queue's cluster-wide counts.
type queueTotals struct {
	Queued, Done, Failed int64
}

// readTotals sums the stats hashes of every slot registered: one pipeline
// (a round trip per master).
func (l *Ledger) readTotals(ctx context.Context) (queueTotals, error) {
	var t queueTotals
	members, err := l.rdb.SMembers(ctx, l.statSlotsKey()).Result()
	if err != nil {
		return t, fmt.Errorf("redis queue: listing the slots with counts: %w", err)
	}
	if len(members) == 0 {
		return t, nil
	}
	pipe := l.rdb.Pipeline()
	cmds := make([]*goredis.SliceCmd, 0, len(members))
	for _, m := range members {
		s, err := strconv.Atoi(m)
		if err != nil || s < 0 || s >= slots {
			continue
		}
		cmds = append(cmds, pipe.HMGet(ctx, l.slotStatsKey(s), "q", "d", "f"))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return t, fmt.Errorf("redis queue: reading %d slots' counts: %w", len(cmds), err)
	}
	for _, c := range cmds {
		v := c.Val()
		n := func(i int) int64 {
			s, _ := v[i].(string)
			x, _ := strconv.ParseInt(s, 10, 64)
			return x
		}
		t.Queued += n(0)
		t.Done += n(1)
		t.Failed += n(2)
	}
	return t, nil
}
