package tui

import (
	"slices"
	"testing"

	"drover/admin"
)

// TestSortNames pins the sort names the console sends, which Backend's
// documentation lists for implementers.
func TestSortNames(t *testing.T) {
	want := map[admin.View][]string{
		admin.ViewWorkers: {"id", "host", "state", "used", "done", "failures", "last_heartbeat", "since"},
		admin.ViewJobs:    {"url", "state", "owner", "waiters", "attempts", "failures", "retry_at", "worker", "created"},
		admin.ViewWaiters: {"position", "session", "since"},
		admin.ViewRetries: {"url", "state", "retry_at", "attempts", "failures", "throttles", "worker"},
		admin.ViewEvents:  {"seq", "at", "kind", "worker"},
	}
	for _, v := range viewOrder {
		if got := views[v].sortable(); !slices.Equal(got, want[v]) {
			t.Errorf("%s sorts by %v, want %v", v, got, want[v])
		}
	}
}

func TestEventState(t *testing.T) {
	tests := []struct{ kind, want string }{
		{"job.done", "done"}, {"job.failed", "failed"}, {"worker.lost", "failed"}, {"job.throttled", "backoff"},
		{"job.dispatched", "dispatched"}, {"key.handover", ""}, {"odd", ""},
	}
	for _, tc := range tests {
		if got := eventState(tc.kind); got != tc.want {
			t.Errorf("eventState(%q) = %q, want %q", tc.kind, got, tc.want)
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
