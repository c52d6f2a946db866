// Package broker is drover's job broker as a pure state machine: it keeps
// the registry of workers, the queue of jobs grouped by the headers they
// require, per-host throttling back-offs, and hands jobs to capable, live
// workers in least-recently-used order (DESIGN.md §3).
//
// The package does no I/O, starts no goroutine and never reads the clock:
// every input carries the current time, randomness comes from the
// *rand.Rand in Config, and outputs are collected as values (Dispatch
// returns assignments; TakeFinished, TakeEvents and TakeClosed drain what the
// caller must act on). A Broker is not safe for concurrent use: one reactor
// goroutine owns it.
//
// Every job is in exactly one state: queued, dispatched, backoff, done or
// failed, so submitted = queued + dispatched + backoff + done + failed at all
// times (done counting the records forgotten under Config.DoneRetention).
//
// # Rules
//
//   - Matching: every header a job requires must be satisfied by the
//     worker: equality, except threads (job ≤ worker, numerically) and
//     hwgroup (the job lists a|b|c, any one equals the worker's). See Match.
//   - Dispatch is pulled by free slots: ready workers (live, not draining,
//     free slots) are served least recently used first; each takes the
//     oldest queued job it matches (FIFO across header classes) and moves
//     to the back. Nothing is dispatched while paused.
//   - Outcomes: OK → done; Internal → failures+1, requeued until failures
//     reach MaxRequestFailures, then failed; External → failed at once;
//     Throttled → the host backs off (Retry-After capped at BackoffCap, else
//     BackoffStart doubling per consecutive throttle, with jitter, capped),
//     and the job and every queued job of the host wait in backoff until it
//     ends; throttles are not failures; a host quiet for BackoffForgive
//     after its last back-off ended is forgiven (level reset).
//   - A lost worker's jobs are requeued and charged one failure each (the
//     budget is shared with internal failures); a clean leave, an eviction,
//     a re-registration without the job and an operator requeue are not
//     charged.
//   - Run identity: a job's attempt number is its fencing token. Result
//     applies only the current attempt of a job dispatched to the
//     reporting session's worker (Recorded); that worker's re-sent result
//     for an attempt recorded before is Again (nothing changes); any other
//     run is Stale, a job ID never allocated Unknown: both ignored and
//     counted. Register re-adopts a held run that is still its job's
//     current attempt (after a loss or a restart) without a new attempt.
//   - A queued job no live, non-draining worker matches is unroutable: it
//     waits with the reason recorded, and fails after UnroutableTimeout
//     when one is set.
//   - Lost workers keep a record (state lost) for the console until they
//     register again, are evicted, or the LostWorkers newest lost records
//     push them out. A draining worker is closed (TakeClosed) and forgotten
//     once its last job ends.
//
// # Data structures
//
// Jobs live in chunks of 1024 records indexed by ID (stable addresses, no
// per-job allocation, chunks reused once all their jobs are forgotten).
// Jobs with the same header set share a class: one intrusive FIFO queue and
// a cached count of capable workers, and each worker caches the classes it
// matches, so a dispatch decision looks at a worker's few classes only.
// Throttled hosts sit in a heap by their next timer.
//
// Console windows never copy or sort the job table: every job's state sits
// in a byte array by ID with per-state counts over blocks of 64, 4096 and
// 262144 IDs, so the k-th job of any state set by age is found by scanning a
// few dozen counters (the same per host, for host= filters). Sorting by url,
// attempts, failures or retry_at uses an order-statistic B+ tree per key
// whose nodes count their jobs per state; each job remembers its leaf, so a
// state change walks up one path. Such a tree is built on the first query
// by its key and dropped again when no query used it for about 2n changes.
// Free-text filters scan once and cache the matches for the same or a
// narrower text.
package broker
