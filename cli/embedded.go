package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"drover/config"
	"drover/net/server"
)

// runEmbedded is drover with no command: the coordinator and broker (as
// serve) with the console in the same process, attached over the
// in-process admin transport. Quitting the console stops the coordinator.
func runEmbedded(cmd *cobra.Command, cfg *config.Config) error {
	if !isTerminal(cmd.OutOrStdout()) || !isTerminal(cmd.InOrStdin()) {
		return usageError("drover with no command runs the coordinator under the console and needs a terminal; use \"drover serve\" for a headless coordinator, or \"drover --help\"")
	}
	topts, err := consoleOptions(cfg, true, false)
	if err != nil {
		return err
	}
	log, closeLog, err := newLogger(cfg, cmd.ErrOrStderr(), true)
	if err != nil {
		return err
	}
	defer closeLog()
	ctx, stop := signalContext(cmd.Context())
	defer stop()
	srv, err := server.New(server.Options{
		Peers: cfg.Peers.Listen, Admin: cfg.Admin.Listen, Events: cfg.Events.Listen,
		Coord: coordConfig(cfg), Log: log, Server: "drover " + version,
	})
	if err != nil {
		return fmt.Errorf("drover: %w", err)
	}
	srvCtx, stopSrv := context.WithCancel(context.Background())
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Run(srvCtx) }()
	defer func() {
		stopSrv()
		<-srvDone
	}()
	return runConsole(ctx, cmd, srv.InprocAdmin(), topts, log)
}
