package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/spf13/cobra"

	"drover/admin"
	"drover/config"
	"drover/net/server"
	"drover/obs"
)

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the coordinator and broker headless (workers, producers and consoles connect to it)",
		Long: `serve runs the work coordinator and job broker without a console. Workers and
producers connect to the peers socket (--bind), consoles and the CLI to the admin
socket (--admin), and the events socket (--events) publishes every state change.
Everything binds to loopback unless told otherwise. SIGINT or SIGTERM stops
dispatching, tells every worker, and exits 0.`,
		Example: `  drover serve
  drover serve --bind tcp://0.0.0.0:5570 --metrics 127.0.0.1:9570
  drover console --connect tcp://127.0.0.1:5571   # in another terminal`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			return runServe(cmd, cfg)
		},
	}
	addServerFlags(cmd)
	return cmd
}

// addServerFlags registers the listen-address flags of a command that runs
// a coordinator.
func addServerFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	must(config.AddFlag(fs, "peers.listen", "bind", ""))
	must(config.AddFlag(fs, "admin.listen", "admin", ""))
	must(config.AddFlag(fs, "events.listen", "events", ""))
	must(config.AddFlag(fs, "metrics.listen", "metrics", ""))
	must(config.AddFlags(fs, "heartbeat.interval", "heartbeat.liveness", "broker.max_request_failures"))
}

func must(err error) {
	if err != nil {
		panic(err) // a programming error in flag wiring, caught by the CLI tests
	}
}

func runServe(cmd *cobra.Command, cfg *config.Config) error {
	log, closeLog, err := newLogger(cfg, cmd.ErrOrStderr(), false)
	if err != nil {
		return err
	}
	defer closeLog()
	ctx, stop := signalContext(cmd.Context())
	defer stop()

	metrics := obs.NewMetrics()
	var notifier *obs.Notifier
	if cfg.Notifier.URL != "" {
		if notifier, err = obs.NewNotifier(obs.NotifierOptionsFrom(cfg.Notifier)); err != nil {
			return &exitError{code: 2, err: err}
		}
		defer notifier.Close(context.Background())
		if err := metrics.RegisterNotifier(notifier); err != nil {
			return err
		}
	}
	opts := server.Options{
		Peers: cfg.Peers.Listen, Admin: cfg.Admin.Listen, Events: cfg.Events.Listen,
		Coord: coordConfig(cfg), Log: log, Server: "drover " + version,
		OnTotals: metrics.Update,
	}
	if notifier != nil {
		opts.OnEvent = func(ev admin.Event) {
			switch ev.Kind {
			case "job.done", "job.failed", "job.retry", "job.throttled", "job.orphan-result", "worker.lost", "worker.evicted":
				notifier.Notify(ev)
			}
		}
	}
	srv, err := server.New(opts)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	var wg sync.WaitGroup
	if cfg.Metrics.Listen != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := obs.Handler(metrics, func() error {
				if !srv.Ready() {
					return errors.New("the reactor is not serving")
				}
				return nil
			})
			if err := obs.Serve(ctx, cfg.Metrics.Listen, h, func(a net.Addr) { log.Info("metrics listening", "addr", a.String()) }); err != nil {
				log.Error("metrics server", "err", err)
			}
		}()
	}
	fmt.Fprintf(cmd.OutOrStdout(), "drover serving: peers %s, admin %s, events %s\n", srv.PeersEndpoint(), srv.AdminEndpoint(), srv.EventsEndpoint())
	err = srv.Run(ctx)
	stop()
	wg.Wait()
	return err
}
