package server

import (
	"fmt"
	"log/slog"

	"github.com/pebbe/zmq4"

	"drover/net/internal/pipe"
	"drover/net/wire"
	"drover/net/zsock"
)

// sender is the Server's way out: it encodes messages and sends them on
// the peers and admin ROUTERs (to an in-process peer it hands them over as
// values, package pipe) and counts what was sent and what could not be.
// Every other part sends through it. The reactor goroutine owns it.
type sender struct {
	enc    wire.Encoder
	io     zsock.MsgIO // whole-message sends
	frames [][]byte    // scratch for sendFrames
	peers  *zmq4.Socket
	admin  *zmq4.Socket
	hub    *pipe.Hub // in-process peers (nil before bind)
	stats  *Stats    // Sent, Undeliverable, Malformed
	log    *slog.Logger
	// malformed counts a refused message in the coordinator's figures
	// (coord.Coordinator.CountMalformed).
	malformed func()
	// dirty marks the reactor's input of a socket sent on: the send may
	// have taken its signal (inputs.go).
	dirty func(*zmq4.Socket)
}

// sockWriter selects which ROUTER to answer on.
type sockWriter uint8

const (
	onPeers sockWriter = iota
	onAdmin
)

// sock is the ROUTER w names.
func (o *sender) sock(w sockWriter) *zmq4.Socket {
	if w == onAdmin {
		return o.admin
	}
	return o.peers
}

// toPeer sends m to the peer with routing id ident on the peers socket.
func (o *sender) toPeer(ident []byte, m wire.Message) bool { return o.send(o.peers, ident, m) }

// toConsole sends m to the console with routing id ident on the admin
// socket.
func (o *sender) toConsole(ident []byte, m wire.Message) bool { return o.send(o.admin, ident, m) }

// send encodes m and sends it to the peer with routing id ident on sk. It
// reports whether the peer got it (or at least its queue did).
func (o *sender) send(sk *zmq4.Socket, ident []byte, m wire.Message) bool {
	frames, err := o.enc.Encode(m)
	if err != nil {
		o.log.Error("encode failed", "command", m.Command(), "err", err)
		return false
	}
	if sk == o.peers && o.isPipe(ident) {
		// Encoded above all the same: a pipe client gets exactly what
		// DRV/2 can carry. Every message the server sends is made for
		// that one send and never changed after, so it is handed over.
		err = o.hub.SendValue(ident, m)
	} else {
		err = o.sendFrames(sk, ident, frames)
	}
	if err != nil {
		o.stats.Undeliverable++
		o.log.Debug("send failed", "command", m.Command(), "err", err, "unroutable", zsock.Unroutable(err), "full", zsock.WouldBlock(err))
		return false
	}
	o.stats.Sent++
	return true
}

// isPipe reports whether ident is an in-process peer's (package pipe):
// what is sent to it is handed over as it is.
func (o *sender) isPipe(ident []byte) bool { return o.hub != nil && pipe.IsClient(ident) }

// sendFrames sends encoded frames on sk, after the routing id ident (nil
// on the events socket), without waiting; it neither counts nor logs.
func (o *sender) sendFrames(sk *zmq4.Socket, ident []byte, frames [][]byte) error {
	o.dirty(sk)
	if ident == nil {
		return o.io.Send(sk, zmq4.DONTWAIT, frames...)
	}
	o.frames = append(append(o.frames[:0], ident), frames...)
	return o.io.Send(sk, zmq4.DONTWAIT, o.frames...)
}

// reject answers a message that could not be processed with ERROR and
// counts it. It never disturbs other sessions.
func (o *sender) reject(w sockWriter, ident []byte, req uint64, code wire.Code, format string, args ...any) {
	o.countMalformed()
	o.send(o.sock(w), ident, &wire.Error{Req: req, Code: code, Msg: wire.Clip(fmt.Sprintf(format, args...), wire.MaxText)})
}

// countMalformed counts a message refused (answered ERROR, or with no one
// to answer).
func (o *sender) countMalformed() {
	o.stats.Malformed++
	o.malformed()
}

// refuseVersion answers a message in another DRV version with ERROR 505 in
// that version (wire.EncodeVersionError), so that an older client reads
// why it is refused. It is counted like any refused message.
func (o *sender) refuseVersion(w sockWriter, ident, proto []byte, we *wire.Error) {
	o.countMalformed()
	frames, err := wire.EncodeVersionError(we, proto)
	if err != nil {
		o.log.Error("encode failed", "command", wire.CmdError, "err", err)
		return
	}
	if err := o.sendFrames(o.sock(w), ident, frames); err != nil {
		o.stats.Undeliverable++
		return
	}
	o.stats.Sent++
}
