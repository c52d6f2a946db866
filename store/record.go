package store

import (
	"fmt"
	"time"

	"drover/coord/id"
)

// KeyState is the persisted state of a work key in the ledger. Requested
// keys are bound to live sessions and are never persisted.
type KeyState uint8

// The persisted key states. The zero value is not a state.
const (
	KeyQueued KeyState = iota + 1 // queued by its owner, waiting for a worker
	KeyDone                       // done with outcome ok
	KeyFailed                     // done with outcome failed
	nKeyStates
)

var keyStateNames = [nKeyStates]string{"", "queued", "done", "failed"}

// String names the state ("queued", "done", "failed").
func (s KeyState) String() string {
	if s > 0 && s < nKeyStates {
		return keyStateNames[s]
	}
	return fmt.Sprintf("key-state(%d)", uint8(s))
}

// KeyRecord is the persisted ledger record of one work key.
type KeyRecord struct {
	FP    id.Fingerprint // the record's identity in the store
	Key   id.Key         // the work key (may be empty when the writer did not know it)
	State KeyState       // queued, done or failed
	At    time.Time      // when the key was queued or done
}

// JobState is the persisted state of a broker job. The values and names are
// those of drover/coord/broker.JobState.
type JobState uint8

// The job states. The zero value is not a state.
const (
	JobQueued     JobState = iota + 1 // waiting for a capable, ready worker
	JobDispatched                     // held by a worker
	JobBackoff                        // waiting for its host's back-off to end
	JobDone                           // finished ok
	JobFailed                         // failed for good
	nJobStates
)

var jobStateNames = [nJobStates]string{"", "queued", "dispatched", "backoff", "done", "failed"}

// String names the state as the broker does ("queued", "dispatched", ...).
func (s JobState) String() string {
	if s > 0 && s < nJobStates {
		return jobStateNames[s]
	}
	return fmt.Sprintf("job-state(%d)", uint8(s))
}

// Attempt is one dispatch of a job, as kept in its history summary.
type Attempt struct {
	Worker  string    // the worker's name
	At      time.Time // when the job was dispatched to it
	Outcome string    // how it ended ("ok", "internal", ...); empty while running
	Error   string    // what went wrong, for failures and throttles
}

// JobRecord is the persisted record of one broker job: its spec, counters,
// state and history summary.
type JobRecord struct {
	ID      uint64            // the broker's job id (broker.JobID); never 0
	FP      id.Fingerprint    // the work key's fingerprint
	Key     id.Key            // the work key
	Host    string            // the per-host back-off key
	Headers map[string]string // required worker headers
	Payload []byte            // opaque payload for the worker

	State     JobState
	Attempts  int       // dispatches so far
	Failures  int       // failures charged to the job's budget
	Throttles int       // throttled outcomes so far
	RetryAt   time.Time // backoff: when the job may run again
	Worker    string    // dispatched: the worker holding it
	LastError string    // the last failure or throttle message
	Created   time.Time // when it was submitted
	Updated   time.Time // its last state change (done and failed records expire from here)
	History   []Attempt // the newest attempts, oldest first
}

// MetaRecord is a named counter the coordinator keeps across restarts (the
// next job id, for example).
type MetaRecord struct {
	Name  string
	Value uint64
}

// RecordKind says which field of a Record is set.
type RecordKind uint8

// The record kinds, in the order Recover returns them.
const (
	KindMeta RecordKind = iota + 1 // Record.Meta
	KindKey                        // Record.Key
	KindJob                        // Record.Job
)

// String names the kind ("meta", "key", "job").
func (k RecordKind) String() string {
	switch k {
	case KindMeta:
		return "meta"
	case KindKey:
		return "key"
	case KindJob:
		return "job"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Record is one persisted record as Recover returns it: Kind says which of
// Meta, Key and Job is set; the others are zero.
type Record struct {
	Kind RecordKind
	Meta MetaRecord
	Key  KeyRecord
	Job  JobRecord
}
