package cli

import (
	"cmp"
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"drover/admin"
	"drover/coord/id"
	"drover/net/client"
)

// requeueWindow is the rows asked for per query when collecting the jobs
// a --filter matches (the coordinator answers at most 10,000 per query).
const requeueWindow = 10000

func newRequeueCmd() *cobra.Command {
	var (
		failed  bool
		filter  string
		crawler string
	)
	cmd, _ := newActionCmd("requeue JOB... | --failed | --filter F", "Requeue jobs now: by id, every failed job, or those a filter matches",
		`requeue puts jobs back in the queue now, like R in the console, keeping their
attempt and failure counts: the jobs named by id (as the console's job detail
and Events view show it, or a worker's jobs in drover status --json) or by
their key's fingerprint (32 hex digits, as the console shows the key), every
failed job (--failed; of one crawl with --crawler NAME), or
every job the console filter F matches (--filter, e.g. "state=backoff
host=example.com"; requested keys that have no job yet are skipped). A job
whose key other work holds again is refused and named. On a Redis Cluster
store a job another coordinator holds (matched by --filter, or named by its
key's fingerprint, as the cluster's rows of the jobs view give it) is requeued
by that coordinator, and the answer names it; --failed, and --filter
state=failed, see this coordinator's failed jobs only (run them on the
coordinator that failed the jobs). Requeueing more than
one job asks first on a terminal; --yes does it without asking, and is
required when stdin is not a terminal.`,
		`  drover requeue 1042
  drover requeue 3f2a9c0d5e6b7a8f9e0d1c2b3a495867
  drover requeue --failed --yes
  drover requeue --failed --crawler news --yes
  drover requeue --filter 'state=backoff host=example.com' --json`,
		func(cmd *cobra.Command, args []string) error {
			given := 0
			for _, b := range []bool{len(args) > 0, failed, filter != ""} {
				if b {
					given++
				}
			}
			if given != 1 {
				return usageError("requeue: give job ids, --failed or --filter F (exactly one of them)")
			}
			if crawler != "" && !failed {
				return usageError("requeue: --crawler goes with --failed (for other selections use --filter crawler=NAME)")
			}
			for _, a := range args {
				if _, err := requeueTarget(a); err != nil {
					return usageError("%v", err)
				}
			}
			return nil
		}, true,
		func(ctx context.Context, cmd *cobra.Command, a *client.Admin, ids []string, f *actionFlags) (admin.Action, string, error) {
			const note = "Back to the queue now; attempt and failure counts are kept."
			switch {
			case failed:
				return requeueFailed(ctx, cmd, a, f, crawler, note)
			case filter != "":
				return requeueFiltered(ctx, cmd, a, f, filter, note)
			}
			act := admin.Action{Kind: admin.ActRequeue}
			for _, t := range ids {
				t, _ = requeueTarget(t) // checked by Args
				act.Targets = append(act.Targets, t)
			}
			if len(ids) == 1 {
				return act, "", nil
			}
			return act, "", confirm(cmd, f, "Requeue "+plural(len(ids), "job")+"?", ids, note)
		},
		func(_ admin.Action, r admin.ActionResult) string { return "requeued " + plural(r.Affected, "job") })
	cmd.Flags().BoolVar(&failed, "failed", false, "requeue every failed job")
	cmd.Flags().StringVar(&crawler, "crawler", "", "with --failed: only the failed jobs of this crawl")
	cmd.Flags().StringVar(&filter, "filter", "", "requeue every job this console filter matches (state=, host=, worker=, crawler=, processor=, key=, wait=, free text)")
	return cmd
}

// requeueTarget checks a requeue argument, a job id or a key's fingerprint,
// and returns it as the coordinator takes it (a fingerprint in lower case).
func requeueTarget(a string) (string, error) {
	if n, err := strconv.ParseUint(a, 10, 64); err == nil && n > 0 {
		return a, nil
	}
	fp, err := id.ParseFingerprint(a)
	if err != nil {
		return "", fmt.Errorf("requeue %q: want a job id (a positive decimal number) or a key's fingerprint (32 hex digits)", a)
	}
	return fp.String(), nil
}

// requeueFailed asks about, then requeues, every failed job (of crawler,
// when given).
func requeueFailed(ctx context.Context, cmd *cobra.Command, a *client.Admin, f *actionFlags, crawler, note string) (admin.Action, string, error) {
	act := admin.Action{Kind: admin.ActRequeueFailed, Crawler: crawler}
	filter, what := "state=failed", "failed job"
	if crawler != "" {
		filter += " crawler=" + crawler
		what = "failed job of crawl " + crawler
	}
	page, err := a.Query(ctx, admin.Query{View: admin.ViewRetries, Filter: filter, Limit: 10})
	if err != nil {
		return act, "", fmt.Errorf("requeue: counting the failed jobs: %w", err)
	}
	if page.Total == 0 {
		return act, "no " + what + "s to requeue", nil
	}
	items := make([]string, 0, len(page.Jobs)+1)
	for _, j := range page.Jobs {
		items = append(items, j.URL)
	}
	if more := page.Total - len(items); more > 0 {
		items = append(items, "and "+plural(more, "more "+what))
	}
	return act, "", confirm(cmd, f, "Requeue all "+plural(page.Total, what)+"?", items, note)
}

// requeueFiltered collects the jobs filter matches, asks, and requeues them.
func requeueFiltered(ctx context.Context, cmd *cobra.Command, a *client.Admin, f *actionFlags, filter, note string) (admin.Action, string, error) {
	act := admin.Action{Kind: admin.ActRequeue}
	var labels []string
	seen := map[uint64]bool{}
	seenKey := map[string]bool{}
	for offset := 0; ; {
		page, err := a.Query(ctx, admin.Query{View: admin.ViewJobs, Filter: filter, Offset: offset, Limit: requeueWindow})
		if err != nil {
			return act, "", fmt.Errorf("requeue: jobs matching %q: %w", filter, err)
		}
		for _, j := range page.Jobs {
			switch {
			case j.JobID == 0 && j.State != "requested" && !seenKey[j.Key]:
				// Another coordinator's job on a Redis Cluster store, or
				// one in its queue: named by key, the coordinator answers
				// where it is.
				seenKey[j.Key] = true
				act.Targets = append(act.Targets, j.Key)
				labels = append(labels, fmt.Sprintf("%s (%s, %s)", j.URL, j.State, cmp.Or(j.Coordinator, "cluster queue")))
			case j.JobID == 0 || seen[j.JobID]:
				// a requested key without a job, or seen on an earlier page
			default:
				seen[j.JobID] = true
				act.Targets = append(act.Targets, strconv.FormatUint(j.JobID, 10))
				labels = append(labels, fmt.Sprintf("%d %s (%s)", j.JobID, j.URL, j.State))
			}
		}
		offset += len(page.Jobs)
		if len(page.Jobs) == 0 || offset >= page.Total {
			break
		}
	}
	switch len(act.Targets) {
	case 0:
		return act, fmt.Sprintf("no jobs match %q: nothing to requeue", filter), nil
	case 1:
		return act, "", nil
	}
	return act, "", confirm(cmd, f, "Requeue "+plural(len(act.Targets), "job")+" matching "+filter+"?", labels, note)
}
