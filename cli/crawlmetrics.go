package cli

import "github.com/spf13/cobra"

// crawlMetricsUsage is drover crawl's --metrics: off unless given, unlike
// serve's, since a crawl is a command that ends and may run beside a serve.
const crawlMetricsUsage = "HTTP address serving /metrics, /healthz and /readyz while the crawl runs: the coordinator's figures and the crawl's (drover_crawl_pages_refused_total); off unless given [DROVER_METRICS_LISTEN]"

// crawlMetricsFlag documents the crawl's --metrics (added by addServerFlags).
func crawlMetricsFlag(cmd *cobra.Command) {
	if f := cmd.Flags().Lookup("metrics"); f != nil {
		f.DefValue, f.Usage = "", crawlMetricsUsage
	}
}
