"""One DRV/2 session over a ZeroMQ DEALER, owned by one I/O thread.

The thread owns the socket (pyzmq sockets are not thread-safe): it says
HELLO, heartbeats, notices a dead server (heartbeat x liveness of silence),
reconnects with back-off (1 s doubling to 32 s, +-10 % jitter; 32 s after
DISCONNECT 410), and re-sends what was not answered. Other threads hand it
work through :meth:`Session.call` and :meth:`Session.post`.
"""

import itertools
import logging
import os
import queue
import random
import socket
import threading
import time
from concurrent.futures import Future

import zmq

from . import drv

# Numbers the sessions' wake-up endpoints: id(self) can name a new session
# like a collected one whose PAIR socket is not closed yet, and binding an
# inproc endpoint still bound fails with "Address already in use".
_wake_seq = itertools.count(1)

log = logging.getLogger("drover")


class DroverError(Exception):
    """The server answered ERROR (``code`` from section 7), or the session could not do the call."""

    def __init__(self, code, message):
        super().__init__("drv %d %s: %s" % (code, drv.CODE_NAMES.get(code, "?"), message))
        self.code, self.message = code, message


# ERROR codes after which a request goes again (section 7: 429 slow down, 500 internal, 503
# unavailable), after a heartbeat interval doubling per try, at most RETRY_TRIES times.
RETRY_CODES = frozenset((drv.CODE_SLOW_DOWN, drv.CODE_INTERNAL, drv.CODE_UNAVAILABLE))
RETRY_TRIES = 6

# DISCONNECT codes after which a client does not reconnect (sections 5 and 10): 200 from the
# server (drained), 409 (superseded by a newer session with the same id), 403 (key revoked).
STOP_CODES = frozenset((drv.CODE_OK, drv.CODE_CONFLICT, drv.CODE_FORBIDDEN))


class _Call:
    """A request waiting for its reply (and, for waits, its later replies)."""

    def __init__(self, command, fields, future, settle, tries=0):
        self.command, self.fields, self.future, self.settle = command, fields, future, settle
        self.items = None  # the reply's items, updated by later replies
        self.tries = tries  # times it was answered 429, 500 or 503


class Session:
    """A client session: ``role`` (drv.WORKER or drv.PRODUCER), ``peer_id``
    (stable across reconnects), ``slots`` and ``headers`` for a worker.

    ``on_message(command, req, fields)`` gets what is not a reply (JOB,
    CANCEL) on the I/O thread; ``on_welcome(fields)`` each WELCOME;
    ``held()`` the job ids to announce in HELLO. After a WELCOME, every call
    not yet answered is sent again (a RESULT without the jobs WELCOME
    cancelled). A call answered ERROR 429, 500 or 503 goes again after a
    heartbeat interval, doubling (up to 32 s), at most RETRY_TRIES times;
    other ERRORs fail its Future with :class:`DroverError`.
    """

    def __init__(self, endpoint, role, peer_id, slots=0, headers=(), heartbeat_ms=1000,
                 on_message=None, on_welcome=None, held=None, context=None, welcome_timeout=5.0):
        self.endpoint, self.role, self.peer_id = endpoint, role, peer_id
        self.slots, self.headers, self.heartbeat_ms = slots, list(headers), heartbeat_ms
        self.on_message, self.on_welcome, self.held = on_message, on_welcome, held or (lambda: [])
        self.welcome_timeout = welcome_timeout
        self.ctx = context or zmq.Context.instance()
        self.ids = itertools.count(1)
        self.outbox = queue.Queue()
        self.calls = {}
        self.welcome = None
        self.hellos = 0  # WELCOMEs received, this session's connections that got one
        # Why the server ended the session for good (a DroverError), or None: DISCONNECT 409
        # superseded, 200 drained or 403, or HELLO refused with 403 (sections 5 and 10).
        self.ended = None
        self.welcomed = threading.Event()
        self.stopping = threading.Event()
        self.wake_addr = "inproc://drover-wake-%d-%d" % (os.getpid(), next(_wake_seq))
        self.wake_lock = threading.Lock()
        self.waker = self.ctx.socket(zmq.PAIR)
        self.waker.bind(self.wake_addr)
        self.thread = threading.Thread(target=self._run, name="drover-session", daemon=True)
        self.thread.start()

    # --- called from any thread --------------------------------------------

    def call(self, command, fields, settle=None):
        """Sends a request; returns a Future of the reply's fields.

        ``settle(items)`` (optional) says whether a reply with items settles
        the call; while it returns False, later replies with the same request
        id (ANSWER, a second SUBMITTED) update the items by fingerprint."""
        f = Future()
        self.outbox.put(("call", command, fields, f, settle))
        self._wake()
        return f

    def post(self, command, fields):
        """Sends a message that has no reply (PROGRESS), or a RESULT through ``fields``' own call."""
        self.outbox.put(("post", command, fields, None, None))
        self._wake()

    def close(self, timeout=5.0):
        """Says DISCONNECT 200 and stops the I/O thread."""
        self.stopping.set()
        self._wake()
        self.thread.join(timeout)
        with self.wake_lock:
            self.waker.close(linger=0)

    def _again(self, c):
        """Sends a call answered 429, 500 or 503 again (on a timer thread)."""
        if self.stopping.is_set():
            if not c.future.done():
                c.future.set_exception(DroverError(drv.CODE_UNAVAILABLE, "session closed"))
            return
        self.outbox.put(("call", c.command, c.fields, c.future, c.settle, c.tries + 1))
        self._wake()

    def _wake(self):
        with self.wake_lock:
            if not self.waker.closed:
                try:
                    self.waker.send(b"", zmq.NOBLOCK)
                except zmq.Again:
                    pass  # wake-ups are pending already: the I/O thread will look

    # --- the I/O thread -------------------------------------------------------

    def _run(self):
        wake = self.ctx.socket(zmq.PAIR)
        wake.connect(self.wake_addr)
        backoff = 1.0
        try:
            while not self.stopping.is_set():
                welcomed, evicted = self._connection(wake)
                if self.stopping.is_set():
                    break
                if self.ended is not None:
                    log.warning("drover: %s: not reconnecting", self.ended)
                    break
                if welcomed:
                    backoff = 1.0
                delay = (32.0 if evicted else backoff) * random.uniform(0.9, 1.1)
                backoff = min(backoff * 2, 32.0)
                log.info("drover: reconnecting to %s in %.1f s", self.endpoint, delay)
                if self.stopping.wait(delay):
                    break
        finally:
            wake.close(linger=0)
            for c in self.calls.values():
                if not c.future.done():
                    c.future.set_exception(self.ended or DroverError(drv.CODE_UNAVAILABLE, "session closed"))

    def _connection(self, wake):
        """One connection, from HELLO to its end; returns (got a WELCOME, evicted)."""
        sock = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        sock.setsockopt(zmq.LINGER, 1000)
        sock.connect(self.endpoint)
        self.welcomed.clear()
        try:
            return self._serve(sock, wake)
        finally:
            sock.close()

    def _send(self, sock, frames):
        sock.send_multipart(frames)
        self.last_out = time.monotonic()

    def _serve(self, sock, wake):
        hello_req = next(self.ids)
        self._send(sock, drv.encode("HELLO", hello_req, {
            "role": self.role, "id": self.peer_id, "host": socket.gethostname()[:255], "slots": self.slots,
            "heartbeat_ms": self.heartbeat_ms, "headers": self.headers if self.role == drv.WORKER else [],
            "held": sorted(self.held()) if self.role == drv.WORKER else []}))
        if not sock.poll(int(self.welcome_timeout * 1000)):
            log.warning("drover: no WELCOME from %s within %.0f s", self.endpoint, self.welcome_timeout)
            return False, False
        command, _, w = drv.decode_reply(sock.recv_multipart())
        if command != "WELCOME":
            log.warning("drover: HELLO refused: %s %s", command, w)
            if command == "ERROR" and w["code"] == drv.CODE_FORBIDDEN:
                self.ended = DroverError(w["code"], "HELLO refused: " + w["message"])
            return False, False
        self.welcome = w
        self.hellos += 1
        beat = w["heartbeat_ms"] / 1000.0
        dead_after = beat * w["liveness"]
        if self.on_welcome:
            self.on_welcome(w)
        # Requests not answered before the connection ended go again, with
        # fresh request ids; a RESULT leaves out the jobs WELCOME cancelled.
        cancel = {(r["job_id"], r["attempt"]) for r in w["cancel"]}
        for req, c in list(self.calls.items()):
            del self.calls[req]
            if c.future.done():
                continue
            if c.command == "RESULT":
                items = [it for it in c.fields["items"] if (it["job_id"], it["attempt"]) not in cancel]
                if not items:
                    c.future.set_result({"items": []})
                    continue
                c.fields = dict(c.fields, items=items)
            c.items = None
            self._start_call(sock, c.command, c.fields, c.future, c.settle)
        self.welcomed.set()
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        poller.register(wake, zmq.POLLIN)
        last_in = time.monotonic()
        while True:
            timeout = max(0.0, min(beat - (time.monotonic() - self.last_out), dead_after - (time.monotonic() - last_in)))
            events = dict(poller.poll(int(timeout * 1000) + 1))
            if wake in events:
                while wake.poll(0):
                    wake.recv()
            if self.stopping.is_set():
                self._send(sock, drv.encode("DISCONNECT", 0, {"code": 200, "reason": "closing"}))
                return True, False
            while True:
                try:
                    kind, command, fields, future, settle, *tries = self.outbox.get_nowait()
                except queue.Empty:
                    break
                if kind == "call":
                    self._start_call(sock, command, fields, future, settle, *tries)
                else:
                    try:
                        self._send(sock, drv.encode(command, 0, fields))
                    except drv.Malformed as e:
                        log.error("drover: %s not sent: %s", command, e)
            if sock in events:
                while sock.poll(0):
                    last_in = time.monotonic()
                    try:
                        command, req, fields = drv.decode_reply(sock.recv_multipart())
                    except drv.Malformed as e:
                        log.warning("drover: malformed message from the server: %s", e)
                        continue
                    end = self._handle(command, req, fields)
                    if end is not None:
                        return end
            now = time.monotonic()
            if now - last_in > dead_after:
                log.warning("drover: nothing from %s for %.1f s: reconnecting", self.endpoint, now - last_in)
                return True, False
            if now - self.last_out >= beat:
                self._send(sock, drv.encode("HEARTBEAT"))

    def _start_call(self, sock, command, fields, future, settle, tries=0):
        req = next(self.ids)
        try:
            frames = drv.encode(command, req, fields)
        except drv.Malformed as e:
            future.set_exception(DroverError(e.code, e.message))
            return
        self.calls[req] = _Call(command, fields, future, settle, tries)
        self._send(sock, frames)

    def _handle(self, command, req, fields):
        """Handles one message; returns (welcomed, evicted) when the connection must end."""
        if command == "HEARTBEAT":
            return None
        if command == "DISCONNECT":
            log.info("drover: server said DISCONNECT %d %s", fields["code"], fields["reason"])
            if fields["code"] in STOP_CODES:
                self.ended = DroverError(fields["code"], "the server ended the session: " + fields["reason"])
            return True, fields["code"] == drv.CODE_EVICTED
        if command == "ERROR" and fields["code"] == drv.CODE_HELLO_REQUIRED:
            return True, False
        c = self.calls.get(req) if req else None
        if c is None:
            if command in ("JOB", "CANCEL") and self.on_message:
                self.on_message(command, req, fields)
            elif command not in ("ANSWER", "SUBMITTED", "ERROR"):
                log.debug("drover: unexpected %s %d", command, req)
            return None
        if command == "ERROR":
            del self.calls[req]
            if fields["code"] in RETRY_CODES and c.tries < RETRY_TRIES and not c.future.done():
                # The server could not take it now: the same request again, later (section 7).
                beat = (self.welcome or {}).get("heartbeat_ms", self.heartbeat_ms) / 1000.0
                delay = min(beat * 2 ** c.tries, 32.0) * random.uniform(0.9, 1.1)
                log.info("drover: %s answered %d %s: again in %.1f s", c.command, fields["code"], fields["message"], delay)
                t = threading.Timer(delay, self._again, (c,))
                t.daemon = True
                t.start()
                return None
            if not c.future.done():
                c.future.set_exception(DroverError(fields["code"], fields["message"]))
            return None
        if c.items is None:
            c.items = fields.get("items")
        else:  # a later ANSWER or SUBMITTED: replace the items it settles
            by_fp = {it["fingerprint"]: it for it in fields["items"]}
            c.items = [by_fp.get(it.get("fingerprint"), it) for it in c.items]
            fields = dict(fields, items=c.items)
        if c.settle is None or c.settle(c.items):
            del self.calls[req]
            if not c.future.done():
                c.future.set_result(fields if c.items is None else dict(fields, items=c.items))
        return None
