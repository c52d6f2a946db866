package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"drover/config"
	"drover/net/client"
)

// defaultAdminTimeout is how long the one-shot admin commands (status and
// the actions) wait for the coordinator by default.
const defaultAdminTimeout = 10 * time.Second

// addAdminFlags adds what every command talking to the coordinator's admin
// endpoint takes: --connect, and --timeout for the one-shot commands. Every
// such command dials through dialAdmin, so a connection option added here
// reaches all of them.
func addAdminFlags(cmd *cobra.Command, withTimeout bool) {
	cmd.Flags().String("connect", "", "the coordinator's admin endpoint (default: admin.listen)")
	addKeyFlags(cmd)
	if withTimeout {
		cmd.Flags().Duration("timeout", defaultAdminTimeout, "how long to wait for the coordinator to answer")
	}
}

// adminTimeout is the command's --timeout (positive), or the default.
func adminTimeout(cmd *cobra.Command) (time.Duration, error) {
	d, err := cmd.Flags().GetDuration("timeout")
	if err != nil {
		return defaultAdminTimeout, nil // the command has no --timeout
	}
	if d <= 0 {
		return 0, usageError("--timeout %v: want a positive duration", d)
	}
	return d, nil
}

// dialAdmin connects to the admin endpoint named by --connect (default
// admin.listen). With --timeout, the dial and every later call are bounded
// by it, and a coordinator that does not answer in time is an error saying
// so; without it (the console) the dial waits until ctx ends.
func dialAdmin(ctx context.Context, cmd *cobra.Command, cfg *config.Config, opts client.AdminOptions) (*client.Admin, error) {
	opts.Connect = connectOr(cmd, cfg.Admin.Listen)
	sec, err := clientSecurity(cfg)
	if err != nil {
		return nil, err
	}
	opts.Security = sec
	timeout, err := adminTimeout(cmd)
	if err != nil {
		return nil, err
	}
	if cmd.Flags().Lookup("timeout") == nil {
		return client.DialAdmin(ctx, opts)
	}
	opts.Timeout = timeout
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	a, err := client.DialAdmin(dctx, opts)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, fmt.Errorf("the coordinator at %s did not answer within %v (is drover serve running there? --connect names another): %w",
			opts.Connect, timeout, err)
	}
	return a, err
}
