package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

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

// NewProgram builds the console as a Bubble Tea program for a terminal
// that is not the process's own, such as a session of drover serve --ssh:
// progOpts give its input, output, environment and window size (wish's
// bubbletea.MakeOptions), env the terminal's environment (NO_COLOR forces
// the mono theme). The program ends when ctx ends, and its backend calls
// with it; running and closing the backend are the caller's business.
func NewProgram(ctx context.Context, b Backend, opts Options, env []string, progOpts ...tea.ProgramOption) (*tea.Program, error) {
	if b == nil {
		return nil, errors.New("console: no backend, want one connected to the coordinator")
	}
	opts, err := runOptions(opts, func(name string) string {
		for _, kv := range env {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v
			}
		}
		return ""
	})
	if err != nil {
		return nil, err
	}
	m := newModel(ctx, b, opts)
	return tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx)}, progOpts...)...), nil
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
