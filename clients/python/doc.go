// Package python runs the tests of drover's Python client (this directory:
// the drover package, its examples and tests) from go test, against the
// conformance kit and a drover binary built from this tree.
package python
