package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"drover/config"
	"drover/coord"
	"drover/coord/broker"
	"drover/coord/ledger"
	"drover/obs"
	"drover/themes"
	"drover/tui"
)

// configFlag is the persistent --config flag shared by every command.
var configFlag = "config"

// loadConfig builds the effective configuration for cmd from its flags, the
// environment and the config file. A configuration error exits with status 2
// and names every bad key.
func loadConfig(cmd *cobra.Command) (*config.Config, error) {
	file, _ := cmd.Flags().GetString(configFlag)
	errOut := cmd.ErrOrStderr()
	cfg, err := config.Load(config.LoadOptions{Flags: cmd.Flags(), File: file,
		Warn: func(s string) { fmt.Fprintln(errOut, s) }})
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	return cfg, nil
}

// usageError exits with status 2.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// coordConfig maps the configuration onto the coordinator core's.
func coordConfig(c *config.Config) coord.Config {
	return coord.Config{
		Heartbeat:      c.Heartbeat.Interval,
		Liveness:       c.Heartbeat.Liveness,
		ReclaimTimeout: c.Broker.ReclaimTimeout,
		Ledger: ledger.Config{
			RequestTTL: c.Ledger.RequestTTL,
			DoneTTL:    c.Ledger.DoneTTL,
			FailedTTL:  c.Ledger.FailedTTL,
			SmallPages: !c.Ledger.HugePages,
		},
		Broker: broker.Config{
			MaxRequestFailures: c.Broker.MaxRequestFailures,
			BackoffStart:       c.Backoff.Start,
			BackoffCap:         c.Backoff.Cap,
			BackoffForgive:     c.Backoff.Forgive,
			Jitter:             orNone(c.Backoff.Jitter),
			RetryStart:         orNone(c.Broker.RetryStart),
			RetryCap:           c.Broker.RetryCap,
			RetryJitter:        orNone(c.Broker.RetryJitter),
			UnroutableTimeout:  c.Broker.UnroutableTimeout,
			HoldbackStart:      c.Broker.HoldbackStart,
			HoldbackCap:        c.Broker.HoldbackCap,
			Politeness:         politeness(c, 0),
			SmallPages:         !c.Ledger.HugePages,
		},
	}
}

// orNone maps a configured 0 ("none") onto the broker's "none", a
// negative value (its 0 takes the default).
func orNone[T time.Duration | float64](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// newLogger makes the process logger. When the console owns the terminal
// and no log.file is set, logs are discarded rather than tearing the screen.
func newLogger(c *config.Config, stderr io.Writer, consoleOwnsTerminal bool) (*slog.Logger, func() error, error) {
	w := stderr
	if consoleOwnsTerminal && c.Log.File == "" {
		w = io.Discard
	}
	log, closeFn, err := obs.NewLogger(c.Log, w)
	if err != nil {
		return nil, nil, &exitError{code: 2, err: err}
	}
	return log, closeFn, nil
}

// runContext is what a long-running command starts with: the process
// logger (newLogger) and a context cancelled on SIGINT or SIGTERM. done
// stops listening for the signals and closes the log.
func runContext(cmd *cobra.Command, cfg *config.Config, consoleOwnsTerminal bool) (ctx context.Context, log *slog.Logger, done func(), err error) {
	log, closeLog, err := newLogger(cfg, cmd.ErrOrStderr(), consoleOwnsTerminal)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, stop := signalContext(cmd.Context())
	return ctx, log, func() { stop(); closeLog() }, nil
}

// consoleContext is runContext for a command that runs the console (which
// owns the terminal), with the console's options (consoleOptions).
func consoleContext(cmd *cobra.Command, cfg *config.Config, embedded, readOnly bool) (topts tui.Options, ctx context.Context, log *slog.Logger, done func(), err error) {
	if topts, err = consoleOptions(cfg, embedded, readOnly); err != nil {
		return topts, nil, nil, nil, err
	}
	ctx, log, done, err = runContext(cmd, cfg, true)
	return topts, ctx, log, done, err
}

// signalContext is cancelled on SIGINT or SIGTERM.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// isTerminal reports whether f is a terminal (not merely a character
// device: /dev/null is one too).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(file.Fd())
}

// ignoreCanceled turns a context cancellation into a clean exit.
func ignoreCanceled(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// consoleOptions maps the console.* keys onto the console's options. A
// custom palette becomes a theme named "custom" on top of the configured
// base theme, and is where the console starts.
func consoleOptions(c *config.Config, embedded, readOnly bool) (tui.Options, error) {
	o := tui.Options{
		Embedded: embedded, Version: version, Refresh: c.Console.Refresh,
		ReadOnly: readOnly || c.Console.ReadOnly,
	}
	if c.Console.Theme != "auto" {
		o.Theme = c.Console.Theme
	}
	if len(c.Console.Palette) > 0 {
		base := o.Theme
		if base == "" {
			base = "dark"
		}
		th, err := themes.Custom("custom", base, c.Console.Palette)
		if err != nil {
			return o, &exitError{code: 2, err: fmt.Errorf("console.palette: %w", err)}
		}
		o.Themes = []themes.Theme{th}
		o.Theme = "custom"
	}
	return o, nil
}

// withConfig is a command's RunE that loads its configuration (loadConfig)
// and runs run with it.
func withConfig(run func(cmd *cobra.Command, cfg *config.Config) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		cfg, err := loadConfig(cmd)
		if err != nil {
			return err
		}
		return run(cmd, cfg)
	}
}
