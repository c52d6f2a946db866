package zsock

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/pebbe/zmq4"
)

// The libzmq handle is found in the pinned pebbe/zmq4: without it MsgIO
// would quietly fall back to the slow per-frame calls.
func TestRawHandleFound(t *testing.T) {
	if !raw.ok {
		t.Fatal("zmq4.Socket has no soc/opened fields: MsgIO falls back to pebbe/zmq4's per-frame calls")
	}
}

// inprocPair is a ROUTER and a DEALER connected over inproc, each closed
// at the end of the test.
func inprocPair(t testing.TB) (router, dealer *zmq4.Socket) {
	t.Helper()
	ep := fmt.Sprintf("inproc://msgio-%s-%p", t.Name(), t)
	r, err := Router(ep)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, r)
	d, err := Dealer(ep, "d1")
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, d)
	return r, d
}

// recvIO waits (polling, with the package deadline) and receives with io.
func recvIO(t *testing.T, io *MsgIO, s *zmq4.Socket) [][]byte {
	t.Helper()
	p := zmq4.NewPoller()
	p.Add(s, zmq4.POLLIN)
	if polled, err := p.Poll(wait); err != nil || len(polled) == 0 {
		t.Fatalf("nothing to receive within %v (err %v)", wait, err)
	}
	frames, err := io.Recv(s, zmq4.DONTWAIT)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

// Messages of every shape go through MsgIO both ways, and through
// pebbe/zmq4 on the other side: frames come out exactly as they went in.
func TestMsgIORoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 3<<20)
	cases := []struct {
		name   string
		frames [][]byte
	}{
		{"one frame", [][]byte{[]byte("hello")}},
		{"drv1 shape", [][]byte{[]byte("DRV/1"), {0x01}, {1, 2, 3, 4, 5, 6, 7, 8}, []byte("body")}},
		{"empty frames", [][]byte{{}, []byte("a"), {}, {}}},
		{"large frame", [][]byte{[]byte("DRV/1"), big}},
	}
	router, dealer := inprocPair(t)
	var rio, dio MsgIO
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// DEALER -> ROUTER with MsgIO on both ends.
			if err := dio.Send(dealer, 0, tc.frames...); err != nil {
				t.Fatal(err)
			}
			got := recvIO(t, &rio, router)
			if string(got[0]) != "d1" {
				t.Fatalf("routing id %q, want d1", got[0])
			}
			equalFrames(t, got[1:], tc.frames)
			// ROUTER -> DEALER with MsgIO sending, pebbe receiving.
			if err := rio.Send(router, zmq4.DONTWAIT, append([][]byte{[]byte("d1")}, tc.frames...)...); err != nil {
				t.Fatal(err)
			}
			equalFrames(t, recv(t, dealer), tc.frames)
			// And pebbe sending, MsgIO receiving.
			parts := make([]any, len(tc.frames))
			for i, f := range tc.frames {
				parts[i] = f
			}
			send(t, dealer, parts...)
			equalFrames(t, recvIO(t, &rio, router)[1:], tc.frames)
		})
	}
}

func equalFrames(t *testing.T, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("frame %d: %d bytes %.20q, want %d bytes %.20q", i, len(got[i]), got[i], len(want[i]), want[i])
		}
	}
}

// A message with more frames than MsgIO keeps arrives cut to maxMsgFrames
// (so a decoder still sees too many), and the next message is intact.
func TestMsgIOTooManyFrames(t *testing.T) {
	router, dealer := inprocPair(t)
	var io MsgIO
	parts := make([]any, 40)
	for i := range parts {
		parts[i] = fmt.Sprint(i)
	}
	send(t, dealer, parts...)
	send(t, dealer, "next")
	got := recvIO(t, &io, router)
	if len(got) != maxMsgFrames {
		t.Fatalf("%d frames kept, want %d", len(got), maxMsgFrames)
	}
	if string(got[1]) != "0" || string(got[maxMsgFrames-1]) != fmt.Sprint(maxMsgFrames-2) {
		t.Fatalf("frames kept %q..%q, want the first ones", got[1], got[maxMsgFrames-1])
	}
	next := recvIO(t, &io, router)
	if len(next) != 2 || string(next[1]) != "next" {
		t.Fatalf("next message %q, want [d1 next]", next)
	}
}

// Errors are pebbe/zmq4's: EAGAIN on an empty socket, EHOSTUNREACH to an
// unknown peer, and a closed socket is refused without touching libzmq.
func TestMsgIOErrors(t *testing.T) {
	router, _ := inprocPair(t)
	var io MsgIO
	if _, err := io.Recv(router, zmq4.DONTWAIT); !WouldBlock(err) {
		t.Fatalf("recv on an empty socket: %v, want EAGAIN", err)
	}
	if err := io.Send(router, zmq4.DONTWAIT, []byte("nobody"), []byte("x")); !Unroutable(err) {
		t.Fatalf("send to an unknown peer: %v, want EHOSTUNREACH", err)
	}
	s, err := zmq4.NewSocket(zmq4.DEALER)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := io.Recv(s, zmq4.DONTWAIT); err != zmq4.ErrorSocketClosed {
		t.Fatalf("recv on a closed socket: %v, want %v", err, zmq4.ErrorSocketClosed)
	}
	if err := io.Send(s, zmq4.DONTWAIT, []byte("x")); err != zmq4.ErrorSocketClosed {
		t.Fatalf("send on a closed socket: %v, want %v", err, zmq4.ErrorSocketClosed)
	}
}

// BenchmarkMsgIO compares a DRV/1-shaped message (routing id and four
// frames) sent and received over inproc with pebbe/zmq4's per-frame calls
// and with MsgIO, in the same run: report the ratio of the two.
func BenchmarkMsgIO(b *testing.B) {
	frames := [][]byte{[]byte("d1"), []byte("DRV/1"), {0x07}, {1, 2, 3, 4, 5, 6, 7, 8}, bytes.Repeat([]byte("b"), 200)}
	b.Run("pebbe", func(b *testing.B) {
		router, dealer := inprocPair(b)
		parts := make([]any, len(frames)-1)
		for i, f := range frames[1:] {
			parts[i] = f
		}
		for b.Loop() {
			if _, err := dealer.SendMessage(parts...); err != nil {
				b.Fatal(err)
			}
			if _, err := router.RecvMessageBytes(0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("msgio", func(b *testing.B) {
		router, dealer := inprocPair(b)
		var rio, dio MsgIO
		for b.Loop() {
			if err := dio.Send(dealer, 0, frames[1:]...); err != nil {
				b.Fatal(err)
			}
			if _, err := rio.Recv(router, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
