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
	if err := opts.Validate(); err != nil {
		return err
	}
	if themes.NoColorRequested(os.Getenv) {
		opts.NoColor = true
	}
	m := newModel(ctx, b, opts)
	defer m.cancel()
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))
	_, err := p.Run()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled):
		return nil
	default:
		return fmt.Errorf("console: %w", err)
	}
}
