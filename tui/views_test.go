package tui

import (
	"slices"
	"testing"

	"drover/admin"
)

// TestSortNames: every column `s` can sort by is an order the coordinator
// serves (admin.Sorts), so no key press silently leaves the order as it
// was.
func TestSortNames(t *testing.T) {
	for _, v := range viewOrder {
		got := views[v].sortable()
		for _, name := range got {
			if !slices.Contains(admin.Sorts[v], name) {
				t.Errorf("%s: column sorts by %q, which the coordinator does not serve (admin.Sorts: %v)", v, name, admin.Sorts[v])
			}
		}
	}
}

func TestEventState(t *testing.T) {
	tests := []struct {
		kind admin.EventKind
		want string
	}{
		{"job.done", "done"}, {"job.failed", "failed"}, {"worker.lost", "failed"}, {"job.throttled", "backoff"},
		{"job.dispatched", "dispatched"}, {"key.handover", ""}, {"odd", ""},
	}
	for _, tc := range tests {
		if got := eventState(tc.kind); got != tc.want {
			t.Errorf("eventState(%q) = %q, want %q", tc.kind, got, tc.want)
		}
	}
	for k := range eventStates {
		if !k.Known() {
			t.Errorf("the console colours %q, which drover never emits", k)
		}
	}
}

func TestCellHelpers(t *testing.T) {
	if got := headerList(map[string]string{"threads": "4", "region": "eu"}); got != "region=eu threads=4" {
		t.Errorf("headerList = %q", got)
	}
	if headerList(nil) != "-" || jobList(nil) != "-" || dash("") != "-" || clockTime(t0.Add(0)) != "12:00:00" {
		t.Error("empty cells should be -, times HH:MM:SS")
	}
	if got := jobList([]uint64{3, 14}); got != "3,14" {
		t.Errorf("jobList = %q", got)
	}
	j := &admin.JobRow{Reason: "host back-off", LastError: "429"}
	if got := errOrReason(j); got != "host back-off: 429" {
		t.Errorf("errOrReason = %q", got)
	}
}
