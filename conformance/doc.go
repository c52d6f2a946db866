// Package conformance holds DRV/2's conformance kit: language-neutral test
// vectors (JSON files beside this one) that any implementation of
// docs/PROTOCOL.md can run, and the Go tests that generate them from
// drover's own codec (go test ./conformance -update) and check that the
// checked-in files still match it. README.md says how to use them.
package conformance
