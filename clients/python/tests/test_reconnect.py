"""A worker keeps its job across a coordinator crash: it re-announces the job
it holds when it reconnects, and its result is recorded once."""

import logging
import queue
import re
import shutil
import tempfile
import threading
import time
import unittest

try:
    import zmq
except ImportError:
    raise unittest.SkipTest("pyzmq is not installed (Debian: python3-zmq)")

from drover import drv, Producer, Worker
from tests import coverage
from tests.server import Server, eventually


class Reconnect(unittest.TestCase):
    def test_held_job_survives_a_server_crash(self):
        logging.getLogger("drover").setLevel(logging.CRITICAL)
        store = tempfile.mkdtemp(prefix="drover-py-")
        self.addCleanup(shutil.rmtree, store, True)
        first = Server(store=store)
        self.addCleanup(first.stop)
        started, release, runs = threading.Event(), threading.Event(), queue.Queue()
        w = Worker(first.peers, peer_id="crash-w", slots=1)

        @w.handler
        def run(job):
            runs.put(job.id)
            started.set()
            release.wait(60)
            return "survived"

        w.start()
        self.addCleanup(w.close)
        with Producer(first.peers, peer_id="crash-p") as p:
            job_id = p.submit([("news", "html", "https://crash.example/")])[0].job_id
        self.assertTrue(started.wait(20), "the job never started")
        first.proc.kill()  # a crash: no DISCONNECT, the job stays assigned in the store
        first.stop()
        port = re.search(r":(\d+)$", first.peers).group(1)
        second = Server("--bind", "tcp://127.0.0.1:" + port, store=store)
        self.addCleanup(second.stop)
        # The worker notices the silence, reconnects, and lists the job in HELLO's held.
        eventually(lambda: w.session.welcomed.is_set() and w.session.welcome["session"] is not None
                   and _reconnected(w), timeout=30, what="the worker's reconnection")
        release.set()
        ack = eventually(lambda: _first(w.acked), timeout=30, what="RESULT-OK")
        self.assertEqual((ack["job_id"], ack["status"]), (job_id, drv.RECORDED))
        self.assertEqual(runs.qsize(), 1, "the job ran twice")
        # The restarted coordinator's events (its restore came before anyone could subscribe):
        # read them from the admin socket's events view.
        a = _dealer(second.admin)
        self.addCleanup(a.close)
        a.send_multipart(drv.encode("HELLO", 1, {"role": drv.CONSOLE, "id": "reconnect-console", "host": "test", "slots": 0,
                                                  "heartbeat_ms": 1000, "headers": [], "held": [], "read_only": True}))
        a.send_multipart(drv.encode("QUERY", 2, {"body": {"view": "events", "limit": 1000}}))
        f = _next(a, "PAGE")[2]
        kinds = {e["kind"] for e in f["body"].get("events", [])}
        self.assertIn("coord.restored", kinds)
        for k in kinds:
            coverage.event(k)


    def test_unreclaimed_job_is_requeued_after_the_window(self):
        """After a crash, a job whose worker never comes back waits the reclaim window
        (broker.reclaim_timeout), then goes back to the queue uncharged: broker.reclaim-ended."""
        logging.getLogger("drover").setLevel(logging.CRITICAL)
        store = tempfile.mkdtemp(prefix="drover-py-")
        self.addCleanup(shutil.rmtree, store, True)
        first = Server(store=store)
        self.addCleanup(first.stop)
        w = _dealer(first.peers)
        w.send_multipart(drv.encode("HELLO", 1, {"role": drv.WORKER, "id": "gone-w", "host": "test", "slots": 1,
                                                  "heartbeat_ms": 1000, "headers": [("suite", "gone")], "held": [],
                                                  "read_only": False}))
        self.assertEqual(_next(w, "WELCOME")[0], "WELCOME")
        with Producer(first.peers, peer_id="gone-p") as p:
            job_id = p.submit([("news", "html", "https://gone.example/", {"suite": "gone"})])[0].job_id
        self.assertEqual(_next(w, "JOB")[2]["jobs"][0]["job_id"], job_id)
        first.proc.kill()  # a crash: the job stays dispatched to gone-w in the store
        first.stop()
        w.close()  # and the worker never comes back
        second = Server(store=store, env={"DROVER_BROKER_RECLAIM_TIMEOUT": "1s"})
        self.addCleanup(second.stop)
        a = _dealer(second.admin)
        self.addCleanup(a.close)
        a.send_multipart(drv.encode("HELLO", 1, {"role": drv.CONSOLE, "id": "reclaim-console", "host": "test", "slots": 0,
                                                  "heartbeat_ms": 1000, "headers": [], "held": [], "read_only": True}))
        _next(a, "WELCOME")
        req = [1]

        def query(view, **kw):
            req[0] += 1
            a.send_multipart(drv.encode("QUERY", req[0], {"body": dict(view=view, limit=1000, **kw)}))
            return _next(a, "PAGE")[2]["body"]

        kinds = eventually(lambda: {e["kind"] for e in query("events").get("events", [])} & {"broker.reclaim-ended"} and
                           {e["kind"] for e in query("events").get("events", [])}, what="broker.reclaim-ended")
        for k in kinds:
            coverage.event(k)
        row = [j for j in query("jobs").get("jobs", []) if j["job_id"] == job_id][0]
        self.assertEqual((row["state"], row.get("failures", 0), row.get("attempts")), ("queued", 0, 1), row)


def _dealer(endpoint):
    s = zmq.Context.instance().socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(endpoint)
    return s


def _next(sock, command, timeout=20):
    """Receives until a message of command (those before it are dropped)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not sock.poll(int(left * 1000) + 1):
            raise AssertionError("no %s within %d s" % (command, timeout))
        msg = drv.decode_reply(sock.recv_multipart())
        if msg[0] == command:
            return msg


def _reconnected(w):
    return w.session.hellos >= 2


def _first(q):
    try:
        return q.get_nowait()
    except queue.Empty:
        return None


if __name__ == "__main__":
    unittest.main()
