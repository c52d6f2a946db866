package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"drover/admin"
	"drover/config"
	"drover/coord/id"
	"drover/crawl"
	"drover/crawl/job"
	"drover/net/client"
	"drover/net/wire"
)

func newSubmitCmd() *cobra.Command {
	var (
		headers      []string
		crawler      string
		processor    string
		seed         bool
		strict       bool
		def          admin.Crawl
		resultsAge   time.Duration
		resultsBytes string
		timeout      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "submit URL... | -",
		Short: "Submit work (deduplicated by the coordinator) and print what became of it",
		Long: `submit sends URLs to the coordinator's peers endpoint as jobs of the work key
(--crawler, --processor, URL) and prints how many were accepted, duplicates,
waiting for another holder of the key, or rejected: the coordinator's answers
for every URL, also when the connection was lost and the submit resumed (a
resent batch is answered as its first send was).

With "-", URLs are read from stdin, one per line (blank lines and lines
starting with # are ignored). A line that cannot be a URL (not UTF-8, longer
than 8192 bytes, or holding a control character) is reported with its line
number and skipped; with --strict, any such line makes the command submit
nothing at all (the input is checked before anything is sent). Exit status 0
when every URL was accepted or a duplicate, 1 when some were skipped or
rejected (each named on stderr), 2 for bad flags. Large inputs go in batches,
several in flight; submit waits for each batch's reply at most --timeout (1m),
counted from the reply before it, so an input of any size fails only when the
coordinator makes no progress for that long.

--scope, --max-depth and --max-pages define the crawl named --crawler on the
coordinator first (over its admin endpoint, --admin): the definition is stored
there, shown by drover status, and travels to the crawl workers with the crawl's
jobs, so workers need no crawl flags; at most --max-pages of the crawl's jobs are
ever dispatched, fleet-wide (jobs past the budget fail with outcome budget, shown
by drover results). A crawl defined once applies to later submits of the same
crawler without the flags; giving them again redefines it (its page count is
kept). --results-max-age and --results-max-bytes give the crawl's results limits
of their own instead of the coordinator's results.max_age and results.max_bytes.`,
		Example: `  drover submit https://example.com/a https://example.com/b
  cat urls.txt | drover submit - --header hwgroup=gpu
  drover submit --strict - < urls.txt
  drover submit https://example.com/ --crawler news --scope domain --max-depth 5 --max-pages 100000`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, hm, err := loadConfigHeaders(cmd, headers)
			if err != nil {
				return err
			}
			define := cmd.Flags().Changed("scope") || cmd.Flags().Changed("max-depth") || cmd.Flags().Changed("max-pages") ||
				cmd.Flags().Changed("results-max-age") || cmd.Flags().Changed("results-max-bytes")
			if define {
				if resultsAge < 0 || (resultsAge > 0 && resultsAge < time.Second) {
					return usageError("submit: --results-max-age %v: want 1s or more, or 0 for the coordinator's results.max_age", resultsAge)
				}
				def.ResultsMaxAge = int64(resultsAge / time.Second)
				if def.ResultsMaxBytes, err = config.ParseSize(resultsBytes); err != nil {
					return usageError("submit: --results-max-bytes: %v", err)
				}
				if _, err := crawl.ParseScope(def.Scope); err != nil {
					return usageError("submit: --scope: %v", err)
				}
				if def.MaxDepth < 0 || def.MaxPages < 0 {
					return usageError("submit: --max-depth %d, --max-pages %d: want 0 (no limit) or more", def.MaxDepth, def.MaxPages)
				}
			}
			in, err := readInput(cmd.InOrStdin(), args)
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			suffix := ": skipped"
			if strict {
				suffix = ""
			}
			for _, b := range in.bad {
				fmt.Fprintf(stderr, "%s %d: %s%s\n", in.unit, b.n, b.why, suffix)
			}
			if len(in.bad) > 0 && strict {
				return &exitError{code: 1, err: fmt.Errorf("submit: %d bad %ss, nothing submitted (--strict)", len(in.bad), in.unit)}
			}
			if len(in.urls) == 0 {
				if len(in.bad) > 0 {
					return &exitError{code: 1, err: fmt.Errorf("submit: no valid URLs: %d bad %ss skipped", len(in.bad), in.unit)}
				}
				return usageError("submit: no URLs on stdin")
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			sec, err := clientSecurity(cfg)
			if err != nil {
				return err
			}
			if define {
				def.Name = crawler
				if err := defineCrawl(ctx, cmd, cfg, def); err != nil {
					return fmt.Errorf("submit: %w", err)
				}
			}
			if timeout <= 0 {
				return usageError("--timeout %v: want a positive duration", timeout)
			}
			ep := connectOr(cmd, cfg.Peers.Listen)
			// The connection is answered at once by a coordinator that runs:
			// it waits the client's default unless --timeout says otherwise.
			dialWait := timeout
			if !cmd.Flags().Changed("timeout") {
				dialWait = client.DefaultTimeout
			}
			dctx, cancelDial := context.WithTimeout(ctx, dialWait)
			c, err := client.Dial(dctx, client.Options{Connect: ep, Security: sec, Timeout: timeout})
			cancelDial()
			if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return fmt.Errorf("submit: the coordinator at %s did not answer within %v (is drover serve running there? --connect names another): %w", ep, dialWait, err)
			}
			if err != nil {
				return fmt.Errorf("submit: %w", err)
			}
			defer c.Close()
			items := make([]wire.SubmitItem, len(in.urls))
			wh := wire.HeadersOf(hm)
			for i, u := range in.urls {
				// No payload: the coordinator gives seeds of a defined crawl
				// its crawl payload, and a crawl worker takes a job without
				// one as a seed of its own scope.
				items[i] = wire.SubmitItem{Key: id.Key{Crawler: crawler, Processor: processor, URL: u.url}, Headers: wh}
			}
			res, err := c.Submit(ctx, items)
			if errors.Is(err, client.ErrTimeout) {
				return fmt.Errorf("submit: %w (a busy coordinator may need a longer --timeout)", err)
			}
			if err != nil {
				return fmt.Errorf("submit: %w", err)
			}
			counts := map[wire.SubmitStatus]int{}
			for i, r := range res {
				counts[r.Status]++
				if r.Status == wire.SubmitError {
					fmt.Fprintf(stderr, "%s %d: rejected by the coordinator (%s): %s\n", in.unit, in.urls[i].n, r.Reason, in.urls[i].url)
				}
			}
			skipped := ""
			if len(in.bad) > 0 {
				skipped = fmt.Sprintf(", %d bad %ss skipped", len(in.bad), in.unit)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d submitted: %d accepted, %d duplicates, %d waiting, %d rejected%s\n",
				len(res), counts[wire.SubmitAccepted], counts[wire.SubmitDuplicate], counts[wire.SubmitWait], counts[wire.SubmitError], skipped)
			if n := counts[wire.SubmitError]; n > 0 || len(in.bad) > 0 {
				return &exitError{code: 1, err: fmt.Errorf("submit: %d URLs rejected, %d bad %ss skipped", n, len(in.bad), in.unit)}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.String("connect", "", "the coordinator's peers endpoint (default: peers.listen)")
	addKeyFlags(cmd)
	fs.String("admin", "", "the coordinator's admin endpoint, where --scope, --max-depth and --max-pages define the crawl (default: admin.listen)")
	fs.StringArrayVar(&headers, "header", nil, "a requirement name=value workers must satisfy (repeatable)")
	fs.StringVar(&crawler, "crawler", job.Crawler, "the crawler part of the work key: the crawl's name")
	fs.StringVar(&processor, "processor", job.Processor, "the processor part of the work key")
	fs.StringVar(&def.Scope, "scope", "host", "define the crawl: links followed within the seed's host, domain or prefix")
	fs.IntVar(&def.MaxDepth, "max-depth", crawl.DefaultMaxDepth, "define the crawl: deepest level followed (the seed is 0); 0: no limit")
	fs.IntVar(&def.MaxPages, "max-pages", 0, "define the crawl: page budget, at most this many of its jobs dispatched fleet-wide; 0: none")
	fs.DurationVar(&resultsAge, "results-max-age", 0, "define the crawl: its results are deleted this long after they finished; 0: the coordinator's results.max_age")
	fs.StringVar(&resultsBytes, "results-max-bytes", "0", "define the crawl: its oldest results are deleted while its results take more (e.g. 500MiB); 0: the coordinator's results.max_bytes")
	fs.DurationVar(&timeout, "timeout", submitTimeout, "how long to wait for each of the coordinator's replies (one batch of URLs, as many as the coordinator's limits allow), counted from the reply before it: a submit of any size gives up only when the coordinator makes no progress for this long; also the wait for the connection (10s unless given)")
	fs.BoolVar(&strict, "strict", false, "submit nothing if any input line is bad (checked before anything is sent)")
	fs.BoolVar(&seed, "seed", true, "no effect (seeds need no payload since crawl definitions)")
	must(fs.MarkDeprecated("seed", "crawl jobs need no payload: a worker takes one without as a seed"))
	return cmd
}

// submitTimeout is submit's default --timeout. The batches of a large
// input are pipelined, and the reply to each comes once the coordinator's
// step that took it in is durable: a step of 20,000 jobs on a coordinator
// getting a few per cent of a core (a loaded machine, a store compacting)
// outlasted 10 s, and a 2,000,000-line submit failed half-way.
const submitTimeout = time.Minute

// defineCrawl stores the crawl's definition on the coordinator (ACTION
// define-crawl on its admin endpoint, --admin).
func defineCrawl(ctx context.Context, cmd *cobra.Command, cfg *config.Config, def admin.Crawl) error {
	ep, _ := cmd.Flags().GetString("admin")
	if ep == "" {
		ep = cfg.Admin.Listen
	}
	sec, err := clientSecurity(cfg)
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, defaultAdminTimeout)
	defer cancel()
	a, err := client.DialAdmin(dctx, client.AdminOptions{Connect: ep, Timeout: defaultAdminTimeout, Security: sec})
	if err != nil {
		return fmt.Errorf("defining crawl %s at %s: %w", def.Name, ep, err)
	}
	defer a.Close()
	if _, err := a.Act(dctx, admin.Action{Kind: admin.ActDefineCrawl, Crawl: &def}); err != nil {
		return fmt.Errorf("defining crawl %s at %s: %w", def.Name, ep, err)
	}
	return nil
}

// inputURL is one URL of the input with its line (or argument) number.
type inputURL struct {
	n   int
	url string
}

// badLine is an input line that cannot be submitted, and why.
type badLine struct {
	n   int
	why string
}

// input is what submit read: the URLs to send and the lines it will not.
type input struct {
	unit string // "line" (stdin) or "argument"
	urls []inputURL
	bad  []badLine
}

// readInput takes URLs from the arguments, or one per line from stdin for
// "-", checking each before anything is sent.
func readInput(stdin io.Reader, args []string) (input, error) {
	if len(args) == 1 && args[0] == "-" {
		in, err := readLines(stdin)
		if err != nil {
			return in, fmt.Errorf("submit: reading URLs from stdin: %w", err)
		}
		return in, nil
	}
	in := input{unit: "argument"}
	for i, a := range args {
		if why := checkURL(a); why != "" {
			in.bad = append(in.bad, badLine{i + 1, why})
			continue
		}
		in.urls = append(in.urls, inputURL{i + 1, a})
	}
	return in, nil
}

// readLines reads one URL per line, with no limit on a line's length
// below DRV/2's own URL limit: a longer line is reported (and the rest of
// it read past), never an error that stops the input.
func readLines(r io.Reader) (input, error) {
	in := input{unit: "line"}
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for n := 1; ; n++ {
		line, long, err := readLine(br, buf[:0], wire.MaxURL+2) // room for "\r\n"
		buf = line
		if err != nil && !errors.Is(err, io.EOF) {
			return in, fmt.Errorf("line %d: %w", n, err)
		}
		if errors.Is(err, io.EOF) && len(line) == 0 && !long {
			return in, nil
		}
		if long {
			in.bad = append(in.bad, badLine{n, fmt.Sprintf("longer than %d bytes, the longest URL DRV/2 carries", wire.MaxURL)})
		} else if u := strings.TrimSpace(string(line)); u != "" && !strings.HasPrefix(u, "#") {
			if why := checkURL(u); why != "" {
				in.bad = append(in.bad, badLine{n, why})
			} else {
				in.urls = append(in.urls, inputURL{n, u})
			}
		}
		if errors.Is(err, io.EOF) {
			return in, nil
		}
	}
}

// readLine appends the next line (without its newline) to buf; past max
// bytes it stops keeping them and reports long, reading to the line's end.
func readLine(br *bufio.Reader, buf []byte, max int) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(buf)+len(chunk) > max+1 {
				long, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if n := len(buf); n > 0 && buf[n-1] == '\n' {
			buf = buf[:n-1]
		}
		return buf, long, err
	}
}

// checkURL says why u cannot be submitted ("" when it can): what DRV/2's
// url field refuses (§4). Whether it is a URL the server decides.
func checkURL(u string) string {
	switch {
	case !utf8.ValidString(u):
		return "not valid UTF-8"
	case len(u) > wire.MaxURL:
		return fmt.Sprintf("%d bytes, longer than %d, the longest URL DRV/2 carries", len(u), wire.MaxURL)
	}
	for _, r := range u {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return fmt.Sprintf("a control character (U+%04X)", r)
		}
	}
	return ""
}
