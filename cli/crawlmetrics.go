package cli

import (
	"context"
	"errors"
	"log/slog"
	"net"

	"github.com/spf13/cobra"

	"drover/config"
	"drover/crawl/job"
	"drover/net/server"
	"drover/obs"
)

// crawlMetricsUsage is drover crawl's --metrics: off unless given, unlike
// serve's, since a crawl is a command that ends and may run beside a serve.
const crawlMetricsUsage = "HTTP address serving /metrics, /healthz and /readyz while the crawl runs: the coordinator's figures and the crawl's (drover_crawl_pages_refused_total); off unless given [DROVER_METRICS_LISTEN]"

// crawlMetricsFlag documents the crawl's --metrics (added by addServerFlags).
func crawlMetricsFlag(cmd *cobra.Command) {
	if f := cmd.Flags().Lookup("metrics"); f != nil {
		f.DefValue, f.Usage = "", crawlMetricsUsage
	}
}

// crawlMetrics makes the crawl's metrics when metrics.listen was set
// (flag, environment or file), else nil.
func crawlMetrics(cfg *config.Config, sink *job.Sink) (*obs.Metrics, error) {
	if cfg.Metrics.Listen == "" || cfg.Source("metrics.listen").Kind == config.FromDefault {
		return nil, nil
	}
	m := obs.NewMetrics()
	if err := m.RegisterCrawl(func() uint64 { return uint64(sink.Refused()) }); err != nil {
		return nil, err
	}
	return m, nil
}

// serveCrawlMetrics serves m until ctx ends; wait waits for that.
func serveCrawlMetrics(ctx context.Context, cfg *config.Config, m *obs.Metrics, srv *server.Server, log *slog.Logger) (wait func(), err error) {
	token, err := metricsToken(cfg)
	if err != nil {
		return nil, err
	}
	h := obs.Handler(m, func() error {
		if !srv.Ready() {
			return errors.New("the reactor is not serving")
		}
		return nil
	})
	h = obs.RequireToken(h, "/metrics", token)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := obs.Serve(ctx, cfg.Metrics.Listen, h, func(a net.Addr) { log.Info("metrics listening", "addr", a.String()) }); err != nil {
			log.Error("metrics server", "err", err)
		}
	}()
	return func() { <-done }, nil
}
