package coord

import "fmt"

// CloseReason says why a session ended. The transport turns it into the
// code and reason of the DISCONNECT it sends (net/server, one table);
// docs/PROTOCOL.md §6.4 lists the reasons and a test keeps the two equal.
type CloseReason uint8

// The close reasons.
const (
	CloseDisconnected CloseReason = iota + 1 // the peer said DISCONNECT
	CloseLost                                // the peer was silent for heartbeat x liveness
	CloseSuperseded                          // a newer session with the same role and id took over
	CloseEvicted                             // an operator evicted the worker
	CloseDrained                             // a drained worker finished its jobs
	CloseShutdown                            // the server is shutting down

	numCloseReasons = iota + 1
)

var closeReasonNames = [numCloseReasons]string{
	CloseDisconnected: "disconnected",
	CloseLost:         "liveness-lost",
	CloseSuperseded:   "superseded",
	CloseEvicted:      "evicted",
	CloseDrained:      "drained",
	CloseShutdown:     "shutdown",
}

// CloseReasons returns every close reason, in order.
func CloseReasons() []CloseReason {
	out := make([]CloseReason, 0, numCloseReasons-1)
	for r := CloseReason(1); r < numCloseReasons; r++ {
		out = append(out, r)
	}
	return out
}

// String is the reason's token, e.g. "liveness-lost".
func (r CloseReason) String() string {
	if r > 0 && r < numCloseReasons {
		return closeReasonNames[r]
	}
	return fmt.Sprintf("close-reason(%d)", uint8(r))
}
