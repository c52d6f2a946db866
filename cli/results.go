package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"drover/admin"
	"drover/config"
	"drover/net/client"
)

func newResultsCmd() *cobra.Command {
	var (
		crawler, processor, format string
		follow                     bool
		from                       uint64
	)
	cmd := &cobra.Command{
		Use:   "results",
		Short: "Print finished jobs' results as JSON lines, from a cursor",
		Long: `results reads the results the coordinator keeps (every finished job's output,
outcome, error, attempt, worker and finish time) and prints them as JSON lines,
oldest first. Each line carries its cursor: a number that only grows. A
consumer that stores the cursor of the last line it processed and restarts
with --from CURSOR loses nothing and sees nothing twice. With a store, a
result is readable once it is durable (the same group commit as its job's
done state), so it survives a crash of the coordinator.

Lines: {"cursor", "job_id", "crawler", "processor", "url", "outcome" (ok,
failed, or budget and cancelled: not run, see drover submit and drover cancel), "error", "attempt", "worker", "finished_at", "output" (valid
UTF-8 up to 1 MiB) or "output_base64" (anything else)}; empty members are left
out. Results deleted by the retention policy (results.max_age,
results.max_bytes) before they were read are reported on standard error.

Without --follow it stops at the newest result; with --follow it waits for more
(and rides out coordinator restarts) until interrupted.`,
		Example: `  drover results > all.jsonl
  drover results --crawler news --follow --from 1200
  drover results | jq -r 'select(.outcome=="ok") | .output'`,
		Args: cobra.NoArgs,
		RunE: withConfig(func(cmd *cobra.Command, cfg *config.Config) error {
			if format != "jsonl" {
				return usageError("--format %q: want jsonl", format)
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			sec, err := clientSecurity(cfg)
			if err != nil {
				return err
			}
			a, err := client.DialAdmin(dctx, client.AdminOptions{Connect: connectOr(cmd, cfg.Admin.Listen), ReadOnly: true, Security: sec})
			if err != nil {
				return fmt.Errorf("results: %w", err)
			}
			defer a.Close()
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			f := resultFollower{a: a, filter: resultsFilter(crawler, processor), follow: follow, warn: cmd.ErrOrStderr()}
			_, err = f.run(ctx, from, func(rows []admin.Result) error {
				for i := range rows {
					if err := writeResultLine(w, &rows[i]); err != nil {
						return err
					}
				}
				return w.Flush()
			})
			if errors.Is(err, context.Canceled) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("results: %w", err)
			}
			return nil
		}),
	}
	fs := cmd.Flags()
	addKeyFlags(cmd)
	fs.String("connect", "", "the coordinator's admin endpoint (default: admin.listen)")
	fs.StringVar(&crawler, "crawler", "", "only the results of this crawler")
	fs.StringVar(&processor, "processor", "", "only the results of this processor")
	fs.BoolVar(&follow, "follow", false, "keep waiting for new results")
	fs.Uint64Var(&from, "from", 0, "print the results after this cursor (the last one processed)")
	fs.StringVar(&format, "format", "jsonl", "output format: jsonl (one JSON object per line)")
	return cmd
}

// resultsFilter is the QUERY filter of a crawler and processor.
func resultsFilter(crawler, processor string) string {
	f := ""
	if crawler != "" {
		f = "crawler=" + crawler
	}
	if processor != "" {
		if f != "" {
			f += " "
		}
		f += "processor=" + processor
	}
	return f
}

// writeResultLine writes r as one JSON line.
func writeResultLine(w io.Writer, r *admin.Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// resultFollower reads results page by page from a cursor.
type resultFollower struct {
	a      *client.Admin
	filter string
	follow bool
	warn   io.Writer    // gaps left by retention are reported here
	log    *slog.Logger // or here (serve)
}

// pageLimit is how many results one QUERY asks for.
const pageLimit = 1000

// run hands every result after from to emit, page by page, and returns the
// last cursor read. Without follow it returns once it has read the newest
// result; with follow it waits for CHANGED (or at most 5 s) and rides out
// reconnections until ctx ends.
func (f *resultFollower) run(ctx context.Context, from uint64, emit func([]admin.Result) error) (uint64, error) {
	cur := from
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		page, err := f.a.Query(ctx, admin.Query{View: admin.ViewResults, From: cur, Limit: pageLimit, Filter: f.filter})
		switch {
		case ctx.Err() != nil:
			return cur, ctx.Err()
		case err != nil && f.follow && (errors.Is(err, client.ErrNotConnected) || errors.Is(err, client.ErrTimeout)):
			// The coordinator is away: wait for the client to reconnect.
		case err != nil:
			return cur, err
		default:
			if page.First > cur+1 && cur > 0 {
				msg := fmt.Sprintf("results after cursor %d up to %d were deleted by the retention policy before they were read", cur, page.First-1)
				if f.warn != nil {
					fmt.Fprintln(f.warn, "drover results: warning:", msg)
				}
				if f.log != nil {
					f.log.Warn(msg)
				}
			}
			if len(page.Results) > 0 {
				if err := emit(page.Results); err != nil {
					return cur, err
				}
			}
			cur = max(cur, page.Next)
			if cur < page.Last {
				continue // more to read now
			}
			if !f.follow {
				return cur, nil
			}
		}
		retry.Reset(5 * time.Second)
		select {
		case <-ctx.Done():
			return cur, ctx.Err()
		case <-f.a.Changed():
		case <-retry.C:
		}
		retry.Stop()
	}
}
