package admin

import "strings"

// EventKind is what an Event says happened: its topic on the events socket
// and its "kind" member in JSON ("job.done"). The kinds below are every kind
// drover emits; docs/PROTOCOL.md §14 lists them, and a test keeps the two
// equal. A receiver keeps kinds it does not know (a newer server may add
// some) as they are.
type EventKind string

// The event kinds, grouped by their topic prefix.
const (
	EventJobSubmitted       EventKind = "job.submitted"        // a job entered the queue
	EventJobDispatched      EventKind = "job.dispatched"       // a job was sent to a worker
	EventJobProgress        EventKind = "job.progress"         // a worker reported a running job's progress
	EventJobDone            EventKind = "job.done"             // a job finished ok
	EventJobRetry           EventKind = "job.retry"            // an internal failure: the job is queued again
	EventJobFailed          EventKind = "job.failed"           // a job failed for good
	EventJobThrottled       EventKind = "job.throttled"        // a worker said throttled: the job waits out its host's back-off
	EventJobBackoff         EventKind = "job.backoff"          // a submitted job waits for its host's back-off
	EventJobWoken           EventKind = "job.woken"            // a job's host back-off ended: it is queued again
	EventJobRequeued        EventKind = "job.requeued"         // a job went back to the queue uncharged (operator, lost registration)
	EventJobReconciled      EventKind = "job.reconciled"       // a reconnecting worker kept a job it listed as held
	EventJobOrphanResult    EventKind = "job.orphan-result"    // a result for a job not assigned to its sender (stale or unknown)
	EventWorkerRegistered   EventKind = "worker.registered"    // a worker said HELLO
	EventWorkerReplaced     EventKind = "worker.replaced"      // a worker's newer session took over from its older one
	EventWorkerLeft         EventKind = "worker.left"          // a worker said DISCONNECT
	EventWorkerLost         EventKind = "worker.lost"          // a worker went silent for heartbeat x liveness
	EventWorkerEvicted      EventKind = "worker.evicted"       // an operator evicted a worker
	EventWorkerDraining     EventKind = "worker.draining"      // an operator drained a worker: no new jobs
	EventWorkerUndrained    EventKind = "worker.undrained"     // an operator undrained a worker
	EventWorkerClosed       EventKind = "worker.closed"        // a drained worker finished its jobs and was let go
	EventWorkerHeldBack     EventKind = "worker.held-back"     // a worker id that died again before a first result gets no jobs for a while
	EventHostBackoff        EventKind = "host.backoff"         // a host backs off: its jobs wait
	EventHostResumed        EventKind = "host.resumed"         // a host's back-off ended
	EventHostForgiven       EventKind = "host.forgiven"        // a host's throttle count was forgotten
	EventHostPolite         EventKind = "host.polite"          // a host at its politeness limit starts holding queued jobs back
	EventHostCrawlDelay     EventKind = "host.crawl-delay"     // a worker reported a host's robots.txt Crawl-delay: its interval changed
	EventBrokerPaused       EventKind = "broker.paused"        // dispatch paused by an operator
	EventBrokerResumed      EventKind = "broker.resumed"       // dispatch resumed
	EventBrokerReclaimEnded EventKind = "broker.reclaim-ended" // after a restart, jobs no worker re-announced went back to the queue
	EventCoordRestored      EventKind = "coord.restored"       // the coordinator's state was restored from its store
	EventKeyRequested       EventKind = "key.requested"        // a session now holds a key
	EventKeyWaiting         EventKind = "key.waiting"          // a session joined a key's waiters
	EventKeyQueued          EventKind = "key.queued"           // a key's holder queued it
	EventKeyDone            EventKind = "key.done"             // a key was marked done
	EventKeyHandover        EventKind = "key.handover"         // a key passed to its next waiter
	EventKeyExpired         EventKind = "key.expired"          // a key's request lease ran out
	EventKeyReleased        EventKind = "key.released"         // a key's holder's session ended
	EventKeyLeft            EventKind = "key.left"             // a waiter's session ended
)

// EventCoordJobIDs: submitted jobs were refused because the coordinator
// has given every job ID (one event per input that had refusals).
const EventCoordJobIDs EventKind = "coord.job-ids-exhausted"

// eventKinds lists the kinds in the order above.
var eventKinds = []EventKind{
	EventJobSubmitted,
	EventJobDispatched,
	EventJobProgress,
	EventJobDone,
	EventJobRetry,
	EventJobFailed,
	EventJobThrottled,
	EventJobBackoff,
	EventJobWoken,
	EventJobRequeued,
	EventJobReconciled,
	EventJobOrphanResult,
	EventWorkerRegistered,
	EventWorkerReplaced,
	EventWorkerLeft,
	EventWorkerLost,
	EventWorkerEvicted,
	EventWorkerDraining,
	EventWorkerUndrained,
	EventWorkerClosed,
	EventWorkerHeldBack,
	EventHostBackoff,
	EventHostResumed,
	EventHostForgiven,
	EventHostPolite,
	EventHostCrawlDelay,
	EventBrokerPaused,
	EventBrokerResumed,
	EventBrokerReclaimEnded,
	EventCoordRestored,
	EventCoordJobIDs,
	EventKeyRequested,
	EventKeyWaiting,
	EventKeyQueued,
	EventKeyDone,
	EventKeyHandover,
	EventKeyExpired,
	EventKeyReleased,
	EventKeyLeft,
}

// EventKinds returns every kind drover emits, in order.
func EventKinds() []EventKind { return append([]EventKind(nil), eventKinds...) }

// Known reports whether k is one of the kinds above.
func (k EventKind) Known() bool {
	for _, x := range eventKinds {
		if x == k {
			return true
		}
	}
	return false
}

// KeyTopic is the topic prefix of the ledger's kinds (key.requested ...):
// one event per key moved, this coordinator's view only (a cluster's shared
// stream leaves them out), built only while someone takes them.
const KeyTopic = "key."

// IsKey reports whether k is one of the ledger's kinds (KeyTopic).
func (k EventKind) IsKey() bool { return strings.HasPrefix(string(k), KeyTopic) }

// String is the kind's name, e.g. "job.done".
func (k EventKind) String() string { return string(k) }
