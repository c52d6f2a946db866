// Package conformance holds DRV/2's conformance kit: language-neutral test
// vectors (JSON files beside this one) that any implementation of
// docs/PROTOCOL.md can run, and the Go tests that generate them from
// drover's own codec (go test ./conformance -update), check that the
// checked-in files still match it, and read every stored vector back
// through the codec (stored_test.go). README.md says how to use them.
package conformance
