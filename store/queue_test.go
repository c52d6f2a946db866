package store

import (
	"errors"
	"slices"
	"testing"
)

// A restore keeps the first MaxQueuedJobs queued jobs and leaves the rest
// (and, with SkipQueuedKeys, every queued key) in the store, counted;
// ReadQueuedJobs then reads the rest in id order, in batches, passing over
// jobs in other states.
func TestQueuedJobsLeftInTheStore(t *testing.T) {
	s := memT(t)
	states := []JobState{JobQueued, JobDone, JobQueued, JobDispatched, JobQueued, JobQueued, JobFailed, JobQueued, JobQueued, JobBackoff, JobQueued}
	commitT(t, s, func(b *Batch) error {
		var errs []error
		for i, st := range states {
			r := jobRec(uint64(i+1), st, base)
			errs = append(errs, b.PutJob(&r))
		}
		for i, st := range []KeyState{KeyQueued, KeyDone, KeyQueued} {
			r := keyRec(i, st, base)
			errs = append(errs, b.PutKey(&r))
		}
		return errors.Join(errs...)
	})
	var jobs []uint64
	keys := 0
	st, err := s.RecoverWith(RecoverOptions{MaxQueuedJobs: 3, SkipQueuedKeys: true}, func(r Record) error {
		switch r.Kind {
		case KindJob:
			jobs = append(jobs, r.Job.ID)
		case KindKey:
			keys++
			if r.Key.State == KeyQueued {
				t.Errorf("queued key %s recovered", r.Key.FP)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Queued jobs 1, 3, 5 kept; 6, 8, 9, 11 left; the others kept.
	if want := []uint64{1, 2, 3, 4, 5, 7, 10}; !slices.Equal(jobs, want) {
		t.Errorf("jobs recovered %v, want %v", jobs, want)
	}
	if keys != 1 || st.KeysQueuedLeft != 2 || st.KeysQueued != 2 {
		t.Errorf("keys recovered %d, queued left %d of %d; want 1, 2 of 2", keys, st.KeysQueuedLeft, st.KeysQueued)
	}
	if st.JobsQueuedLeft != 4 || st.FirstJobLeft != 6 || st.JobsQueued != 7 {
		t.Errorf("queued jobs left %d from %d of %d; want 4 from 6 of 7", st.JobsQueuedLeft, st.FirstJobLeft, st.JobsQueued)
	}

	var read []uint64
	after := st.FirstJobLeft - 1
	for {
		last, n, err := s.ReadQueuedJobs(after, 3, func(r *JobRecord) error {
			if r.State != JobQueued {
				t.Errorf("record %+v", r)
			}
			read = append(read, r.ID)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			if last != after {
				t.Errorf("an empty read moved from %d to %d", after, last)
			}
			break
		}
		after = last
	}
	if want := []uint64{6, 8, 9, 11}; !slices.Equal(read, want) {
		t.Errorf("read %v, want %v", read, want)
	}
	stop := errors.New("stop")
	if _, _, err := s.ReadQueuedJobs(0, 10, func(*JobRecord) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("callback error: %v, want it wrapped", err)
	}
}
