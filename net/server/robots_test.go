package server

import (
	"testing"

	"drover/coord/broker"
	"drover/net/wire"
)

// TestRobotsHeaderIsOneName: the broker decides which workers probe a
// host's robots.txt by the same HELLO header the wire and the worker
// library use.
func TestRobotsHeaderIsOneName(t *testing.T) {
	if broker.RobotsHeader != wire.RobotsHeader {
		t.Fatalf("broker.RobotsHeader %q, wire.RobotsHeader %q: want one name", broker.RobotsHeader, wire.RobotsHeader)
	}
}
