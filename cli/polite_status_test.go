package cli

import (
	"strings"
	"testing"
	"time"

	"drover/admin"
)

// TestPrintPolite: status lists the hosts holding jobs back for
// politeness with their queued jobs, jobs in flight, limits and when each
// is next eligible (a host waiting for a fetch to end has no time), at
// most maxPoliteShown of them.
func TestPrintPolite(t *testing.T) {
	at := time.Now().Add(time.Hour)
	hosts := []admin.HostRow{
		{Host: "a.test", Jobs: 7, Polite: true, InFlight: 1, Limit: "1 at once, 1 per 2s"},
		{Host: "b.test", Jobs: 3, Polite: true, Until: at, Limit: "1 per 2s"},
	}
	for i := range maxPoliteShown {
		hosts = append(hosts, admin.HostRow{Host: "many" + string(rune('a'+i)) + ".test", Jobs: 1, Polite: true, Until: at, Limit: "1 per 1s"})
	}
	var out strings.Builder
	printPolite(&out, hosts)
	got := out.String()
	for _, want := range []string{
		"POLITE HOST", "NEXT DISPATCH",
		"a.test", "1 at once, 1 per 2s", "when a fetch of it ends",
		"b.test", at.Local().Format("15:04:05.000"),
		"(2 more)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status polite hosts lack %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, ".test"); n != maxPoliteShown {
		t.Errorf("%d hosts listed, want %d:\n%s", n, maxPoliteShown, got)
	}
	out.Reset()
	printPolite(&out, nil)
	if out.Len() != 0 {
		t.Errorf("no polite host printed %q, want nothing", out.String())
	}
}
