package server

import (
	"errors"
	"testing"
	"time"

	"drover/clock"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/store"
)

// fakeClusterResults keeps results as the cluster would, refusing the
// adds while down.
type fakeClusterResults struct {
	down bool
	adds int
	kept []store.ResultRecord
}

func (f *fakeClusterResults) Add(recs []store.ResultRecord) error {
	f.adds++
	if f.down {
		return errors.New("cluster down")
	}
	for i := range recs {
		recs[i].Cursor = uint64(len(f.kept) + 1)
		f.kept = append(f.kept, recs[i])
	}
	return nil
}

func (f *fakeClusterResults) Bounds() (uint64, uint64, error) { return 1, uint64(len(f.kept)), nil }

func (f *fakeClusterResults) Read(after, upTo uint64, fn func(*store.ResultRecord) bool) error {
	return nil
}

func (f *fakeClusterResults) Trim(time.Time, *store.Retention) (int, error) { return 0, nil }

// TestClusterResultsResent: a result the cluster did not take (Redis
// down) is added once it is back, though no job finishes after it (it
// used to wait for the next finish, and after the last one was lost),
// tried again at most once per resendResultsEvery.
func TestClusterResultsResent(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	f := &fakeClusterResults{down: true}
	s := newServer(t, Options{Clock: clk, Results: &ResultsOptions{}, ClusterResults: f})
	s.res.keepStep(s.now, []broker.Finished{{Job: 1, Key: id.Key{Crawler: "c", Processor: "p", URL: "http://a.test/"}, At: clk.Now()}}, &s.cl)
	if f.adds != 1 || len(f.kept) != 0 {
		t.Fatalf("%d adds, %d kept, want 1 add refused", f.adds, len(f.kept))
	}
	f.down = false
	s.res.keepStep(s.now, nil, &s.cl) // a step with no job finished, at once
	if f.adds != 1 {
		t.Errorf("%d adds after a step at once, want still 1 (tried again at most once per %v)", f.adds, resendResultsEvery)
	}
	clk.Advance(resendResultsEvery)
	for range 3 {
		s.res.keepStep(s.now, nil, &s.cl)
	}
	if len(f.kept) != 1 || f.kept[0].Job != 1 || f.adds != 2 {
		t.Fatalf("%d adds, kept %+v, want the result added by the one step after %v", f.adds, f.kept, resendResultsEvery)
	}
	if len(s.res.step) != 0 {
		t.Errorf("%d results still waiting, want none", len(s.res.step))
	}
}
