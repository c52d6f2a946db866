//go:build !unix

package offheap

// mapRegion returns n zeroed bytes of Go memory where memory cannot be
// mapped from the operating system.
func mapRegion(n int, _ bool) []byte { return make([]byte, n) }

func unmapRegion([]byte) {}
