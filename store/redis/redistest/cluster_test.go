package redistest

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A node started again on a port something else took exits at once
// (bind: address already in use): Restart says so without waiting out its
// deadline, with the node's log lines naming the cause; and the ports
// chosen stay below the kernel's ephemeral range, where no outgoing
// connection takes them while a node is down.
func TestRestartOnTakenPortFailsWithLog(t *testing.T) {
	c := Start(t)
	if lo, ok := ephemeralLow(); ok && lo-10000-Nodes > 11000 {
		for _, p := range c.Ports {
			if p+10000 >= lo {
				t.Fatalf("node port %d (bus %d) is in the ephemeral range from %d", p, p+10000, lo)
			}
		}
	}
	c.Kill(5)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(c.Ports[5]))
	if err != nil {
		t.Fatalf("taking the killed node's port: %v", err)
	}
	defer l.Close()
	start := time.Now()
	err = c.Restart(5)
	if err == nil {
		t.Fatal("Restart on a taken port succeeded; want an error")
	}
	if !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "Address already in use") {
		t.Fatalf("Restart on a taken port: %v; want it to say the node exited, with its log's bind error", err)
	}
	if d := time.Since(start); d >= nodeStart {
		t.Fatalf("Restart took %v to see the node exit; want it seen before its %v deadline", d, nodeStart)
	}
}
