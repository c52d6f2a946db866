"""A worker keeps its job across a coordinator crash: it re-announces the job
it holds when it reconnects, and its result is recorded once."""

import logging
import queue
import re
import shutil
import tempfile
import threading
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
        a = zmq.Context.instance().socket(zmq.DEALER)
        a.setsockopt(zmq.LINGER, 0)
        self.addCleanup(a.close)
        a.connect(second.admin)
        a.send_multipart(drv.encode("HELLO", 1, {"role": drv.CONSOLE, "id": "reconnect-console", "host": "test", "slots": 0,
                                                  "heartbeat_ms": 1000, "headers": [], "held": [], "read_only": True}))
        a.send_multipart(drv.encode("QUERY", 2, {"body": {"view": "events", "limit": 1000}}))
        while True:
            self.assertTrue(a.poll(10000), "no PAGE from the admin socket")
            command, req, f = drv.decode_reply(a.recv_multipart())
            if command == "PAGE":
                break
        kinds = {e["kind"] for e in f["body"].get("events", [])}
        self.assertIn("coord.restored", kinds)
        for k in kinds:
            coverage.event(k)


def _reconnected(w):
    return w.session.hellos >= 2


def _first(q):
    try:
        return q.get_nowait()
    except queue.Empty:
        return None


if __name__ == "__main__":
    unittest.main()
