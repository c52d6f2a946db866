package cli

import (
	"testing"

	"drover/config"
)

// TestCoordConfigHugePages: ledger.huge_pages sets the pages of both the
// ledger's and the broker's tables outside the Go heap.
func TestCoordConfigHugePages(t *testing.T) {
	for _, huge := range []bool{true, false} {
		var c config.Config
		c.Ledger.HugePages = huge
		cc := coordConfig(&c)
		if cc.Ledger.SmallPages == huge || cc.Broker.SmallPages == huge {
			t.Errorf("ledger.huge_pages %v: ledger SmallPages %v, broker SmallPages %v, want both %v",
				huge, cc.Ledger.SmallPages, cc.Broker.SmallPages, !huge)
		}
	}
}
