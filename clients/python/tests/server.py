"""Starts a real `drover serve` for the tests (the binary named by $DROVER_BIN)."""

import os
import re
import subprocess
import tempfile
import threading
import time
import unittest

from drover import drv
from tests import coverage


class Server:
    """`drover serve` on loopback ports the OS chose, its store in memory or in ``store``."""

    def __init__(self, *args, store="memory", env=None):
        binary = os.environ.get("DROVER_BIN")
        if not binary:
            raise unittest.SkipTest("DROVER_BIN is not set: run these tests through go test ./clients/python")
        env = dict(os.environ, DROVER_CONFIG="", NO_COLOR="1", **(env or {}))
        env.pop("DROVER_BIN")
        self.proc = subprocess.Popen(
            [binary, "serve", "--bind", "tcp://127.0.0.1:0", "--admin", "tcp://127.0.0.1:0",
             "--events", "tcp://127.0.0.1:0", "--metrics", "", "--store", store] + list(args),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.log = []
        m = None
        for _ in range(10):  # a store first says what it restored
            line = self.proc.stdout.readline().decode()
            m = re.search(r"^drover serving: peers (\S+), admin (\S+), events (\S+)", line)
            if m or not line:
                break
        if not m:
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()
            self.proc.stderr.close()
            raise RuntimeError("drover serve said %r; stderr: %s" % (line, self.proc.stderr.read().decode()))
        self.peers, self.admin, self.events = m.groups()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line.decode(errors="replace"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode


def eventually(cond, timeout=20.0, what="condition"):
    """Polls cond until it is true (returns its value) or fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(0.02)


class Events:
    """Collects the kinds seen on the events socket."""

    def __init__(self, endpoint):
        self.kinds, self.seqs, self.bad = set(), [], []  # bad: events the decoder refused
        self.done = []  # the job.done events
        import zmq
        self.sock = zmq.Context.instance().socket(zmq.SUB)
        self.sock.setsockopt(zmq.SUBSCRIBE, b"")
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            if self.sock.poll(100):
                try:
                    ev = drv.decode_event(self.sock.recv_multipart())  # the topic's limits included
                except drv.Malformed as e:
                    self.bad.append(str(e))
                    continue
                self.kinds.add(ev["kind"])
                if ev["kind"] == "job.done":
                    self.done.append(ev)
                coverage.event(ev["kind"])
                self.seqs.append(ev["seq"])

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()
