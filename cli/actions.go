package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"drover/admin"
	"drover/net/client"
	"drover/net/wire"
)

// The console's actions as commands: pause, resume, evict, drain and
// requeue, over the admin protocol with the same semantics as the console's
// keys (P, E, D, R).

// actionFlags are the flags every action command takes.
type actionFlags struct {
	asJSON bool
	yes    bool
}

// actionOutcome is what --json prints.
type actionOutcome struct {
	Action    admin.ActionKind `json:"action"`
	Requested int              `json:"requested"`
	Affected  int              `json:"affected"`
	Errors    []string         `json:"errors,omitempty"`
}

// stdinIsTerminal says whether confirmations can be asked on r (a variable
// so tests can pretend a terminal).
var stdinIsTerminal = func(r io.Reader) bool { return isTerminal(r) }

// newActionCmd builds one action command: run computes the action (asking
// for confirmation as it needs) and says what it did in text.
func newActionCmd(use, short, long, example string, args cobra.PositionalArgs, confirmable bool,
	run func(ctx context.Context, cmd *cobra.Command, a *client.Admin, args []string, f *actionFlags) (admin.Action, string, error),
	done func(act admin.Action, r admin.ActionResult) string) (*cobra.Command, *actionFlags) {
	f := &actionFlags{}
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Example: example, Args: args,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			name := cmd.Name()
			a, err := dialAdmin(ctx, cmd, cfg, client.AdminOptions{ID: "cli-" + name})
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			defer a.Close()
			act, skip, err := run(ctx, cmd, a, args, f)
			if err != nil {
				return err
			}
			if skip != "" { // nothing to do
				return report(cmd, f, actionOutcome{Action: act.Kind}, skip)
			}
			res, err := actInBatches(ctx, a, act)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			n := len(act.Targets)
			switch {
			case act.Kind == admin.ActRequeueFailed:
				n = res.Affected + len(res.Errors)
			case n == 0:
				n = 1
			}
			out := actionOutcome{Action: act.Kind, Requested: n, Affected: res.Affected, Errors: res.Errors}
			return report(cmd, f, out, done(act, res))
		},
	}
	addAdminFlags(cmd, true)
	cmd.Flags().BoolVar(&f.asJSON, "json", false, `print the outcome as JSON: {"action","requested","affected","errors"}`)
	if confirmable {
		cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, "do it without asking (required when stdin is not a terminal)")
	}
	return cmd, f
}

// actInBatches runs act, its targets split within DRV/2's batch limit.
func actInBatches(ctx context.Context, a *client.Admin, act admin.Action) (admin.ActionResult, error) {
	if len(act.Targets) <= wire.MaxBatch {
		return a.Act(ctx, act)
	}
	var total admin.ActionResult
	for lo := 0; lo < len(act.Targets); lo += wire.MaxBatch {
		hi := min(lo+wire.MaxBatch, len(act.Targets))
		r, err := a.Act(ctx, admin.Action{Kind: act.Kind, Targets: act.Targets[lo:hi]})
		total.Affected += r.Affected
		total.Errors = append(total.Errors, r.Errors...)
		if err != nil {
			return total, fmt.Errorf("after %d of %d targets: %w", lo, len(act.Targets), err)
		}
	}
	return total, nil
}

// report prints the outcome (text or JSON); refused targets make the
// command fail, after printing.
func report(cmd *cobra.Command, f *actionFlags, o actionOutcome, text string) error {
	out := cmd.OutOrStdout()
	if f.asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(o); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, text)
		for _, e := range o.Errors {
			fmt.Fprintln(cmd.ErrOrStderr(), "refused:", e)
		}
	}
	if len(o.Errors) > 0 {
		return fmt.Errorf("%s: %d of %d refused: %s", cmd.Name(), len(o.Errors), o.Requested, o.Errors[0])
	}
	return nil
}

// confirm asks on the terminal before a destructive action; --yes skips
// the question, and without a terminal to ask on the action is refused.
func confirm(cmd *cobra.Command, f *actionFlags, title string, items []string, note string) error {
	if f.yes {
		return nil
	}
	in := cmd.InOrStdin()
	if !stdinIsTerminal(in) {
		return usageError("%s: not done: %s, and stdin is not a terminal to confirm on; pass --yes to %s without asking",
			cmd.Name(), strings.TrimSuffix(lowerFirst(title), "?"), cmd.Name())
	}
	w := cmd.ErrOrStderr()
	fmt.Fprintln(w, title)
	const show = 10
	for i, it := range items {
		if i == show {
			fmt.Fprintf(w, "  and %d more\n", len(items)-show)
			break
		}
		fmt.Fprintln(w, "  "+it)
	}
	if note != "" {
		fmt.Fprintln(w, note)
	}
	fmt.Fprint(w, "Proceed? [y/N] ")
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("%s: cancelled: nothing was done", cmd.Name())
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// knownWorkers checks every id names a registered worker, so a typo is an
// error before anything is asked or done. On a Redis Cluster store a
// worker may be connected to another coordinator, which this one's
// workers view does not list: there the ids it does not know are left to
// the coordinator, which looks them up in the cluster, has the action
// carried out where the worker is, and names in its answer any id that
// no coordinator knows.
func knownWorkers(ctx context.Context, a *client.Admin, verb string, ids []string) error {
	var clustered *bool
	for _, w := range ids {
		if strings.ContainsAny(w, " \t") || w == "" {
			return usageError("%s %q: a worker id has no spaces (drover status lists them)", verb, w)
		}
		page, err := a.Query(ctx, admin.Query{View: admin.ViewWorkers, Filter: "worker=" + w, Limit: 100})
		if err != nil {
			return fmt.Errorf("%s: looking up worker %s: %w", verb, w, err)
		}
		found := false
		for _, r := range page.Workers {
			found = found || r.ID == w
		}
		if found {
			continue
		}
		if clustered == nil {
			t, err := a.Totals(ctx)
			if err != nil {
				return fmt.Errorf("%s: looking up worker %s: %w", verb, w, err)
			}
			c := t.Cluster != nil
			clustered = &c
		}
		if !*clustered {
			return fmt.Errorf("%s: unknown worker %q: drover status lists the workers", verb, w)
		}
	}
	return nil
}

func newPauseCmd() *cobra.Command {
	var crawler string
	cmd, _ := newActionCmd("pause", "Pause dispatch (or one crawl's, --crawler): queued jobs wait, running ones run to the end",
		`pause stops the coordinator dispatching jobs, like P in the console: queued jobs
wait, dispatched jobs run to the end, submits are still accepted. "drover resume"
dispatches again. Pausing a paused coordinator does nothing.

With --crawler NAME only that crawl (the jobs whose key has crawler NAME) is
paused: its jobs wait (queued) while other crawls' jobs are dispatched; the
pause is stored and survives restarts.`,
		"  drover pause\n  drover pause --crawler news\n  drover pause --connect tcp://10.0.0.5:5571 --json", cobra.NoArgs, false,
		func(context.Context, *cobra.Command, *client.Admin, []string, *actionFlags) (admin.Action, string, error) {
			return admin.Action{Kind: admin.ActPause, Crawler: crawler}, "", nil
		},
		func(act admin.Action, r admin.ActionResult) string {
			return switchMessage(act, r, "paused", "was already paused", "was already paused")
		})
	cmd.Flags().StringVar(&crawler, "crawler", "", "pause only this crawl")
	return cmd
}

// switchMessage says what pause or resume did: to one crawl (act.Crawler)
// or to dispatch, done (past) or not needed (crawlNoop, dispatchNoop) when
// nothing was affected.
func switchMessage(act admin.Action, r admin.ActionResult, past, crawlNoop, dispatchNoop string) string {
	what, noop := "dispatch", dispatchNoop
	if act.Crawler != "" {
		what, noop = "crawl "+act.Crawler, crawlNoop
	}
	if r.Affected == 0 {
		return what + " " + noop
	}
	return what + " " + past
}

func newResumeCmd() *cobra.Command {
	var crawler string
	cmd, _ := newActionCmd("resume", "Resume dispatch after drover pause (or one crawl's, --crawler)",
		`resume lets the coordinator dispatch jobs again after "drover pause" (or P in
the console). Resuming a coordinator that is not paused does nothing. With
--crawler NAME it resumes that crawl after "drover pause --crawler NAME" or
"drover cancel --crawler NAME" (cancelled jobs stay failed: "drover requeue
--failed --crawler NAME" brings them back).`,
		"  drover resume\n  drover resume --crawler news", cobra.NoArgs, false,
		func(context.Context, *cobra.Command, *client.Admin, []string, *actionFlags) (admin.Action, string, error) {
			return admin.Action{Kind: admin.ActResume, Crawler: crawler}, "", nil
		},
		func(act admin.Action, r admin.ActionResult) string {
			return switchMessage(act, r, "resumed", "was not paused or cancelled", "was not paused")
		})
	cmd.Flags().StringVar(&crawler, "crawler", "", "resume only this crawl")
	return cmd
}

func newCancelCmd() *cobra.Command {
	var crawler string
	run := func(ctx context.Context, cmd *cobra.Command, a *client.Admin, _ []string, f *actionFlags) (admin.Action, string, error) {
		if crawler == "" {
			return admin.Action{}, "", usageError("cancel: --crawler NAME is required")
		}
		act := admin.Action{Kind: admin.ActCancel, Crawler: crawler}
		return act, "", confirm(cmd, f, "Cancel crawl "+crawler+"?", []string{crawler},
			"Its jobs that have not run fail as cancelled; running jobs finish.")
	}
	cmd, _ := newActionCmd("cancel --crawler NAME", "Cancel one crawl: its jobs that have not run fail as cancelled",
		`cancel stops the crawl NAME (the jobs whose key has crawler NAME): its queued and
backing-off jobs fail at once with outcome cancelled (drover results shows them),
later jobs of it fail the same way, and its running jobs run to the end. The
cancellation is stored and survives restarts. "drover resume --crawler NAME"
lets new jobs of it run again, and "drover requeue --failed --crawler NAME"
brings the cancelled ones back. On a Redis Cluster store the cancel applies
on every coordinator within a second; the jobs this coordinator holds fail
at once, and those waiting in the cluster's queue as a coordinator claims
them (for its workers' free slots: with no worker connected anywhere they
stay queued). It asks first on a terminal; --yes does it
without asking, and is required when stdin is not a terminal.`,
		"  drover cancel --crawler news --yes", cobra.NoArgs, true, run,
		func(act admin.Action, r admin.ActionResult) string {
			// affected is the jobs failed, but at least 1 when the
			// state changed (PROTOCOL §13.1): 1 may mean none.
			switch {
			case r.Affected == 0:
				return "crawl " + act.Crawler + " was cancelled already"
			case r.Affected == 1:
				return "crawl " + act.Crawler + " cancelled"
			}
			return "crawl " + act.Crawler + " cancelled: " + plural(r.Affected, "job") + " failed as cancelled"
		})
	cmd.Flags().StringVar(&crawler, "crawler", "", "the crawl to cancel (required)")
	return cmd
}

func newEvictCmd() *cobra.Command {
	cmd, _ := newActionCmd("evict WORKER...", "Evict workers: their jobs go back to the queue, not charged a failure",
		`evict drops workers, like E in the console: the coordinator closes their
sessions and puts the jobs they held back in the queue, not charged a failure
(a worker that reconnects registers afresh). It asks first on a terminal;
--yes does it without asking, and is required when stdin is not a terminal.
An unknown worker id is an error before anything is done. On a Redis Cluster
store a worker connected to another coordinator is evicted by that one (the
answer says whether it did, did not answer in time, or is dead), and an id no
coordinator knows is refused, named.`,
		"  drover evict w-12\n  drover evict w-12 w-13 --yes --json", cobra.MinimumNArgs(1), true,
		func(ctx context.Context, cmd *cobra.Command, a *client.Admin, ids []string, f *actionFlags) (admin.Action, string, error) {
			if err := knownWorkers(ctx, a, "evict", ids); err != nil {
				return admin.Action{}, "", err
			}
			act := admin.Action{Kind: admin.ActEvict, Targets: ids}
			return act, "", confirm(cmd, f, "Evict "+plural(len(ids), "worker")+"?", ids,
				"Their jobs go back to the queue, not charged a failure.")
		},
		func(_ admin.Action, r admin.ActionResult) string { return "evicted " + plural(r.Affected, "worker") })
	return cmd
}

func newDrainCmd() *cobra.Command {
	var undo bool
	cmd, _ := newActionCmd("drain WORKER...", "Drain workers: no new jobs; they leave when their jobs finish",
		`drain stops giving workers new jobs, like D in the console: each finishes the
jobs it holds and then leaves (a drover worker exits 0). --undo takes draining
workers back: they get jobs again. An unknown worker id is an error before
anything is done. On a Redis Cluster store a worker connected to another
coordinator is drained (or undrained) by that one, and an id no coordinator
knows is refused, named.`,
		"  drover drain w-12\n  drover drain --undo w-12", cobra.MinimumNArgs(1), false,
		func(ctx context.Context, _ *cobra.Command, a *client.Admin, ids []string, _ *actionFlags) (admin.Action, string, error) {
			kind := admin.ActDrain
			if undo {
				kind = admin.ActUndrain
			}
			return admin.Action{Kind: kind, Targets: ids}, "", knownWorkers(ctx, a, string(kind), ids)
		},
		func(act admin.Action, r admin.ActionResult) string {
			if act.Kind == admin.ActUndrain {
				return "undrained " + plural(r.Affected, "worker") + ": they take jobs again"
			}
			return "draining " + plural(r.Affected, "worker") + ": no new jobs; they leave when their jobs finish"
		})
	cmd.Flags().BoolVar(&undo, "undo", false, "undrain: the workers take new jobs again")
	return cmd
}

// plural says "1 worker", "3 workers".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
