package server

import (
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"drover/net/client"
)

// The scaffolding of the memory benchmarks (keymem_test.go,
// queuedmem_test.go): their size from the environment, the heap and RSS
// read the same way, and a coordinator without a store with a producer.

// benchSize is the positive count the environment variable env holds, else
// def.
func benchSize(env string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(env)); err == nil && v > 0 {
		return v
	}
	return def
}

// heapBytes is the Go heap's live objects after two collections (the
// first may leave what finalizers kept).
func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// rssBytes is the process's resident set size (0 where /proc does not
// say): what the ledger keeps outside the Go heap counts too.
func rssBytes() uint64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(st)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// memServer runs a coordinator without a store and dials a producer to it
// as id; stop closes the producer and stops the coordinator.
func memServer(b *testing.B, id string) (s *Server, p *client.Client, stop func()) {
	b.Helper()
	s, stopSrv := runServer(b, Options{})
	p, err := client.Dial(context.Background(), client.Options{Connect: s.PeersEndpoint(), ID: id})
	if err != nil {
		b.Fatal(err)
	}
	return s, p, func() {
		p.Close()
		if err := stopSrv(); err != nil {
			b.Error(err)
		}
	}
}
