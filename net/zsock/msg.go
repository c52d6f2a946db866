package zsock

/*
#cgo !windows pkg-config: libzmq
#include <errno.h>
#include <string.h>
#include <zmq.h>

// drv_recv receives every frame of one message into msgs[0..max-1]
// (initialising them) and their sizes; frames past max are received and
// dropped (*dropped counts them). It returns the number of frames kept, or
// -1 with the error in *err (nothing is then kept).
static int drv_recv(void *s, int flags, zmq_msg_t *msgs, int max, size_t *sizes, int *dropped, int *err) {
	int n = 0;
	*dropped = 0;
	for (;;) {
		zmq_msg_t *m = &msgs[n < max ? n : max];
		zmq_msg_init(m);
		int rc;
		do {
			// The frames after the first are there already: a message
			// arrives whole.
			rc = zmq_msg_recv(m, s, n == 0 ? flags : 0);
		} while (rc < 0 && zmq_errno() == EINTR);
		if (rc < 0) {
			*err = zmq_errno();
			zmq_msg_close(m);
			for (int i = 0; i < n && i < max; i++) {
				zmq_msg_close(&msgs[i]);
			}
			return -1;
		}
		int more = zmq_msg_more(m);
		if (n < max) {
			sizes[n] = zmq_msg_size(m);
			n++;
		} else {
			zmq_msg_close(m);
			(*dropped)++;
		}
		if (!more) {
			return n;
		}
	}
}

// drv_take copies the n frames received into dst, one after another, and
// closes them.
static void drv_take(zmq_msg_t *msgs, int n, char *dst) {
	for (int i = 0; i < n; i++) {
		size_t size = zmq_msg_size(&msgs[i]);
		if (size > 0) {
			memcpy(dst, zmq_msg_data(&msgs[i]), size);
			dst += size;
		}
		zmq_msg_close(&msgs[i]);
	}
}

// drv_send sends n frames laid out one after another in buf, of the sizes
// in lens, as one message. It returns 0, or -1 with the error in *err.
static int drv_send(void *s, int flags, const char *buf, const size_t *lens, int n, int *err) {
	for (int i = 0; i < n; i++) {
		int f = flags | (i < n - 1 ? ZMQ_SNDMORE : 0);
		int rc;
		do {
			rc = zmq_send(s, buf, lens[i], f);
		} while (rc < 0 && zmq_errno() == EINTR);
		if (rc < 0) {
			*err = zmq_errno();
			return -1;
		}
		buf += lens[i];
	}
	return 0;
}

// drv_user_id copies the User-Id metadata of m (set by the ZAP handler
// that admitted the connection) into dst, at most cap bytes; it returns
// the length, or -1 when the message has none (NULL mechanism, inproc).
static int drv_user_id(zmq_msg_t *m, char *dst, int cap) {
	const char *v = zmq_msg_gets(m, "User-Id");
	if (v == NULL) {
		return -1;
	}
	int n = (int)strlen(v);
	if (n > cap) {
		n = cap;
	}
	memcpy(dst, v, n);
	return n;
}

// drv_set_int sets an int socket option by number (for options the
// binding does not name); it returns 0 or the errno.
static int drv_set_int(void *s, int option, int value) {
	if (zmq_setsockopt(s, option, &value, sizeof value) != 0) {
		return zmq_errno();
	}
	return 0;
}
*/
import "C"

import (
	"reflect"
	"syscall"
	"unsafe"

	"github.com/pebbe/zmq4"
)

// Whole messages in one call. pebbe/zmq4 receives a message frame by
// frame, with about six cgo calls per frame (init, receive, data, copy,
// close, RCVMORE) and an allocation per frame; sending is similar. DRV/2
// messages have four or five frames and the reactor and the connection
// loops move tens of thousands a second, so those calls were the largest
// single cost of the transport. MsgIO receives a whole message in two cgo
// calls into one allocation, and sends one in one call.
//
// It needs the socket's libzmq handle, which pebbe/zmq4 keeps unexported:
// it is found by reflection once (field "soc", an unsafe.Pointer, and
// "opened", a bool, of zmq4.Socket, as in the version go.mod pins). Should
// a later version change that, MsgIO falls back to pebbe/zmq4's own calls
// (TestRawHandleFound says so).

// maxMsgFrames is the most frames MsgIO keeps of one message: a ROUTER's
// routing id and DRV/2's at most four frames, with room to spare so that
// a message with too many frames still reaches the decoder as such.
const maxMsgFrames = 16

var raw = func() (h struct {
	ok          bool
	soc, opened uintptr
}) {
	t := reflect.TypeFor[zmq4.Socket]()
	soc, ok1 := t.FieldByName("soc")
	opened, ok2 := t.FieldByName("opened")
	if ok1 && ok2 && soc.Type.Kind() == reflect.UnsafePointer && opened.Type.Kind() == reflect.Bool {
		h.ok, h.soc, h.opened = true, soc.Offset, opened.Offset
	}
	return h
}()

// handle is s's libzmq socket, or nil when s is closed (or the handle
// cannot be found: then ok is false).
func handle(s *zmq4.Socket) (p unsafe.Pointer, ok bool) {
	if !raw.ok {
		return nil, false
	}
	base := unsafe.Pointer(s)
	if !*(*bool)(unsafe.Add(base, raw.opened)) {
		return nil, true
	}
	return *(*unsafe.Pointer)(unsafe.Add(base, raw.soc)), true
}

// MsgIO sends and receives whole messages. It holds scratch space (libzmq
// message structures among it): use one per goroutine (the one that owns
// the sockets it is used on), keep it in a long-lived struct, and do not
// copy it.
type MsgIO struct {
	msgs  [maxMsgFrames + 1]C.zmq_msg_t // the last one receives dropped frames
	sizes [maxMsgFrames]C.size_t
	buf   []byte
}

// Recv receives one message: its frames share one new allocation. Errors
// are zmq4.Errno, as pebbe/zmq4's (WouldBlock tells EAGAIN).
func (io *MsgIO) Recv(s *zmq4.Socket, flags zmq4.Flag) ([][]byte, error) {
	h, ok := handle(s)
	if !ok {
		return s.RecvMessageBytes(flags)
	}
	if h == nil {
		return nil, zmq4.ErrorSocketClosed
	}
	var dropped, errno C.int
	n := C.drv_recv(h, C.int(flags), &io.msgs[0], maxMsgFrames, &io.sizes[0], &dropped, &errno)
	if n < 0 {
		return nil, zmq4.Errno(syscall.Errno(errno))
	}
	return io.take(int(n)), nil
}

// take copies the n frames drv_recv received into one allocation and
// closes them.
func (io *MsgIO) take(n int) [][]byte {
	total := 0
	for i := range n {
		total += int(io.sizes[i])
	}
	data := make([]byte, total)
	var dst *C.char
	if total > 0 {
		dst = (*C.char)(unsafe.Pointer(&data[0]))
	}
	C.drv_take(&io.msgs[0], C.int(n), dst)
	frames := make([][]byte, n)
	off := 0
	for i := range frames {
		size := int(io.sizes[i])
		frames[i] = data[off : off+size : off+size]
		off += size
	}
	return frames
}

// maxUserID bounds the User-Id MsgIO.RecvUser reads (a ZAP handler's
// user id; drover's are Z85 public keys of 40 characters).
const maxUserID = 255

// RecvUser is Recv that also returns the message's User-Id, the name the
// ZAP handler gave the connection's client when it admitted it ("" for a
// connection no ZAP handler saw: the NULL mechanism, or inproc).
func (io *MsgIO) RecvUser(s *zmq4.Socket, flags zmq4.Flag) ([][]byte, string, error) {
	h, ok := handle(s)
	if !ok {
		frames, meta, err := s.RecvMessageBytesWithMetadata(flags, "User-Id")
		return frames, meta["User-Id"], err
	}
	if h == nil {
		return nil, "", zmq4.ErrorSocketClosed
	}
	var dropped, errno C.int
	n := C.drv_recv(h, C.int(flags), &io.msgs[0], maxMsgFrames, &io.sizes[0], &dropped, &errno)
	if n < 0 {
		return nil, "", zmq4.Errno(syscall.Errno(errno))
	}
	var buf [maxUserID]byte
	user := ""
	if un := C.drv_user_id(&io.msgs[n-1], (*C.char)(unsafe.Pointer(&buf[0])), maxUserID); un >= 0 {
		user = string(buf[:un])
	}
	return io.take(int(n)), user, nil
}

// setZAPEnforceDomain asks libzmq to refuse handshakes when no ZAP handler
// answers (ZMQ_ZAP_ENFORCE_DOMAIN, a draft option: a libzmq built without
// the draft API refuses it, and then drover relies on its handler running
// for as long as the sockets that use it, which HandleZAP guarantees).
func setZAPEnforceDomain(s *zmq4.Socket) error {
	h, ok := handle(s)
	if !ok || h == nil {
		return nil
	}
	const zapEnforceDomain = 93
	if e := C.drv_set_int(h, zapEnforceDomain, 1); e != 0 && syscall.Errno(e) != syscall.EINVAL {
		return zmq4.Errno(syscall.Errno(e))
	}
	return nil
}

// Send sends frames as one message (flags: zmq4.DONTWAIT or 0). Errors are
// zmq4.Errno, as pebbe/zmq4's (WouldBlock, Unroutable).
func (io *MsgIO) Send(s *zmq4.Socket, flags zmq4.Flag, frames ...[]byte) error {
	h, ok := handle(s)
	if !ok || len(frames) > maxMsgFrames {
		parts := make([]any, len(frames))
		for i, f := range frames {
			parts[i] = f
		}
		var err error
		if flags&zmq4.DONTWAIT != 0 {
			_, err = s.SendMessageDontwait(parts...)
		} else {
			_, err = s.SendMessage(parts...)
		}
		return err
	}
	if h == nil {
		return zmq4.ErrorSocketClosed
	}
	if len(frames) == 0 {
		return nil
	}
	io.buf = io.buf[:0]
	for i, f := range frames {
		io.sizes[i] = C.size_t(len(f))
		io.buf = append(io.buf, f...)
	}
	var src *C.char
	if len(io.buf) > 0 {
		src = (*C.char)(unsafe.Pointer(&io.buf[0]))
	}
	var errno C.int
	if C.drv_send(h, C.int(flags), src, &io.sizes[0], C.int(len(frames)), &errno) < 0 {
		return zmq4.Errno(syscall.Errno(errno))
	}
	if cap(io.buf) > 1<<20 {
		io.buf = nil // don't keep a huge message's buffer
	}
	return nil
}
