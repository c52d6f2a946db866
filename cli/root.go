// Package cli wires drover's commands (cobra) to its configuration and
// starts the pieces: coordinator, transport, workers and console.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Build information, set at link time by goreleaser and the Makefile
// (-ldflags "-X drover/cli.version=...").
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

// exitError carries a specific exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Main runs drover with the given arguments and streams and returns the
// process exit status: 0 on success, 2 for usage or configuration errors,
// 1 for anything else.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "drover:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if isUsage(err) {
		return 2
	}
	return 1
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "drover",
		Short: "Work coordinator and job broker for distributed crawls, with an operations console",
		Long: `drover stops two workers from doing the same work and hands jobs to live,
capable workers, requeueing whatever a crashed, disconnected or throttled
worker held. With no command it runs the coordinator (as "drover serve", with
the same store, so the next start picks up where it stopped; --store memory for
a throwaway session) under the operations console. Run "drover demo" to watch a
local crawl.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE:          withConfig(runEmbedded),
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	addServerFlags(root)
	addStoreFlags(root)
	addServerSecurityFlags(root)
	root.PersistentFlags().String(configFlag, "", "config file (default: $DROVER_CONFIG, ./drover.yaml, $XDG_CONFIG_HOME/drover/drover.yaml, /etc/drover/drover.yaml)")
	root.AddCommand(newVersionCmd(), newServeCmd(), newConfigCmd(), newCrawlCmd(), newDemoCmd(),
		newWorkerCmd(), newSubmitCmd(), newStatusCmd(), newConsoleCmd(), newKeygenCmd(),
		newPauseCmd(), newResumeCmd(), newEvictCmd(), newDrainCmd(), newRequeueCmd(), newCancelCmd(), newResultsCmd(), newWARCCmd())
	return root
}

// isUsage recognises cobra's errors for a bad command line (it has no
// typed errors for them): they exit 2, like configuration errors.
func isUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "invalid argument", "flag needs an argument", "accepts ", "requires at least", "requires exactly"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
