package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
)

// frontierResult is one drain of a durable coordinator.
type frontierResult struct {
	drain float64 // jobs/s, workers start to last job done
	rss   int64   // serve's RSS once every job was submitted
}

// droverFrontier starts `drover serve --store DIR --store-resident-jobs
// resident` on a fresh store, submits jobs no-op jobs, notes serve's RSS,
// and drains them with the queue benchmark's workers (droverQueue).
func droverFrontier(ctx context.Context, bin string, round, jobs, resident, workers, slots int) (frontierResult, error) {
	dir, err := os.MkdirTemp("", "drover-bench-frontier-")
	if err != nil {
		return frontierResult{}, err
	}
	defer os.RemoveAll(dir)
	s, err := startDrover(bin, dir, "--store-resident-jobs", strconv.Itoa(resident))
	if err != nil {
		return frontierResult{}, err
	}
	defer s.stop()
	var rss int64
	q, err := droverQueueWith(ctx, s, round, jobs, workers, slots, func() {
		if r, err := settledRSS(s.cmd.Process.Pid); err == nil {
			rss = r
		}
	})
	if err != nil {
		return frontierResult{}, err
	}
	return frontierResult{drain: q.drainRate(), rss: rss}, nil
}

func benchFrontier(ctx context.Context, cfg config) error {
	var paged, all series
	var rssPaged, rssAll []int64
	if err := alternate(cfg.rounds, func(round int) []func() error {
		sides := []func() error{
			func() error {
				r, err := droverFrontier(ctx, cfg.drover, round, cfg.frontierJobs, cfg.resident, cfg.workers, cfg.slots)
				if err == nil {
					paged, rssPaged = append(paged, r.drain), append(rssPaged, r.rss)
					progress("frontier round %d: resident %d: drain %s jobs/s, RSS %d MB", round+1, cfg.resident, human(r.drain), r.rss>>20)
				}
				return err
			},
			func() error {
				r, err := droverFrontier(ctx, cfg.drover, round, cfg.frontierJobs, 0, cfg.workers, cfg.slots)
				if err == nil {
					all, rssAll = append(all, r.drain), append(rssAll, r.rss)
					progress("frontier round %d: all in memory: drain %s jobs/s, RSS %d MB", round+1, human(r.drain), r.rss>>20)
				}
				return err
			},
		}
		return sides
	}); err != nil {
		return err
	}
	fmt.Printf("## Queued jobs beyond RAM\n\n`drover serve --store DIR` (durable, `store.sync` batch), %d no-op jobs submitted before %d workers × %d slots start; `--store-resident-jobs %d` against `0` (all in memory); %d rounds, sides alternating. Load average now: %s.\n\n",
		cfg.frontierJobs, cfg.workers, cfg.slots, cfg.resident, cfg.rounds, loadavg())
	fmt.Printf("| side | drain jobs/s by round | median | serve RSS after the submit (MB) | paged / all in memory |\n|---|---|---|---|---|\n")
	fmt.Printf("| resident %d | %s | %s | %s | %.2f× |\n", cfg.resident, paged, human(paged.median()), mbs(rssPaged), paged.median()/all.median())
	fmt.Printf("| all in memory | %s | %s | %s | — |\n\n", all, human(all.median()), mbs(rssAll))
	return nil
}

func mbs(v []int64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += ", "
		}
		s += strconv.FormatInt(x>>20, 10)
	}
	return s
}
