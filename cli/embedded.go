package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"drover/config"
	"drover/net/client"
)

// runEmbedded is drover with no command: the coordinator and broker as
// serve runs them (the same store, metrics and notifier) with the console
// in the same process, attached over the in-process admin transport.
// Quitting the console stops the coordinator.
func runEmbedded(cmd *cobra.Command, cfg *config.Config) error {
	if !isTerminal(cmd.OutOrStdout()) || !isTerminal(cmd.InOrStdin()) {
		return usageError("drover with no command runs the coordinator under the console and needs a terminal; use \"drover serve\" for a headless coordinator, or \"drover --help\"")
	}
	topts, ctx, log, done, err := consoleContext(cmd, cfg, true, false)
	if err != nil {
		return err
	}
	defer done()
	// The coordinator as serve runs it (store, metrics, notifier); it stops
	// after the console, so the console's last queries are answered.
	srvCtx, stopSrv := context.WithCancel(context.Background())
	c, err := startCoordinator(srvCtx, cfg, log, coordSpec{})
	if err != nil {
		stopSrv()
		return err // Main says "drover: " before it
	}
	defer c.close()
	srvDone := make(chan error, 1)
	go func() { srvDone <- c.srv.Run(srvCtx) }()
	defer func() {
		stopSrv()
		<-srvDone
	}()
	a, err := client.DialAdmin(ctx, client.AdminOptions{Connect: c.srv.InprocAdmin(), ID: "console", ReadOnly: topts.ReadOnly, Log: log})
	if err != nil {
		return fmt.Errorf("console: attaching to the coordinator: %w", err)
	}
	return runConsole(ctx, cmd, a, topts)
}
