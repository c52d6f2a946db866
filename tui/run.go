package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	tea "charm.land/bubbletea/v2"

	"drover/themes"
)

// Run runs the console on a terminal (alternate screen) until the operator
// quits or ctx is cancelled, which both return nil. in and out are the
// terminal, os.Stdin and os.Stdout in production. NO_COLOR in the
// environment forces the mono theme. Closing the console leaves the backend
// as it is: stopping an embedded coordinator is the caller's business.
func Run(ctx context.Context, b Backend, opts Options, in io.Reader, out io.Writer) error {
	if b == nil {
		return errors.New("console: no backend, want one connected to the coordinator")
	}
	opts, err := runOptions(opts, os.Getenv)
	if err != nil {
		return err
	}
	m := newModel(ctx, b, opts)
	defer m.cancel()
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))
	_, err = p.Run()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled):
		return nil
	default:
		return fmt.Errorf("console: %w", err)
	}
}

// runOptions validates the options and applies the environment: NO_COLOR
// forces the mono theme.
func runOptions(opts Options, getenv func(string) string) (Options, error) {
	if err := opts.Validate(); err != nil {
		return opts, err
	}
	if themes.NoColorRequested(getenv) {
		opts.NoColor = true
	}
	return opts, nil
}
