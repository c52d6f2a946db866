"""The Python client against a real `drover serve`: every command, verdict,
status, outcome, reason and error code the protocol names, and the event
kinds they cause."""

import json
import logging
import queue
import threading
import time
import unittest

try:
    import zmq
except ImportError:  # the Go test that runs this suite says why it skips
    raise unittest.SkipTest("pyzmq is not installed (Debian: python3-zmq)")

from drover import drv, Producer, Worker, Ok, External, Internal, Throttled, Key
from drover.session import DroverError
from drover.url import fingerprint, normalize
from tests.server import Server, eventually


class Raw:
    """A bare DEALER speaking DRV/2 through the client's codec, for protocol-level checks."""

    def __init__(self, endpoint):
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)

    def send(self, frames):
        self.sock.send_multipart(frames)

    def recv(self, timeout=10.0, skip=("HEARTBEAT",)):
        deadline = time.monotonic() + timeout
        while True:
            if not self.sock.poll(max(1, int((deadline - time.monotonic()) * 1000))):
                raise AssertionError("no message within %.0f s" % timeout)
            command, req, fields = drv.decode_reply(self.sock.recv_multipart())
            if command not in skip:
                return command, req, fields

    def hello(self, role, peer_id, **kw):
        fields = {"role": role, "id": peer_id, "host": "test", "slots": kw.pop("slots", 0), "heartbeat_ms": 1000,
                  "headers": kw.pop("headers", []), "held": kw.pop("held", []), "read_only": kw.pop("read_only", False)}
        self.send(drv.encode("HELLO", 1, fields))
        return self.recv()

    def close(self):
        self.sock.close()


class Events:
    """Collects the kinds seen on the events socket."""

    def __init__(self, endpoint):
        self.kinds, self.seqs = set(), []
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
                topic, body = self.sock.recv_multipart()
                ev = json.loads(body)
                assert ev["kind"] == topic.decode()
                self.kinds.add(ev["kind"])
                self.seqs.append(ev["seq"])

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()


K = lambda url: Key("news", "html", url)  # noqa: E731


class LiveServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        logging.getLogger("drover").setLevel(logging.CRITICAL)  # the handlers' exceptions are on purpose
        cls.server = Server(env={"DROVER_BACKOFF_START": "1s", "DROVER_BACKOFF_JITTER": "0"})
        cls.events = Events(cls.server.events)
        # Let the subscription reach the server before anything happens.
        time.sleep(0.2)

    @classmethod
    def tearDownClass(cls):
        cls.events.close()
        rc = cls.server.stop()
        assert rc == 0, "drover serve exited %s:\n%s" % (rc, "".join(cls.server.log))

    def producer(self, name):
        p = Producer(self.server.peers, peer_id=name, timeout=20)
        self.addCleanup(p.close)
        return p

    def raw(self):
        r = Raw(self.server.peers)
        self.addCleanup(r.close)
        return r

    # --- the ledger -----------------------------------------------------------

    def test_ledger_verdicts_and_reasons(self):
        a, b = self.producer("ledger-a"), self.producer("ledger-b")
        u = "https://ledger.example/x"
        v = a.request([K(u)])[0]
        self.assertEqual((v.verdict, v.reason), (drv.OK, ""))
        self.assertEqual(v.fingerprint, fingerprint("news", "html", u))
        self.assertEqual(a.request([K(u)])[0][:2], (drv.OK, "owner"))
        w = b.request([K(u)], wait=False)[0]
        self.assertEqual((w.verdict, w.reason), (drv.WAIT, "requested"))
        self.assertEqual(b.queue([K(u)])[0][:2], (drv.ERROR, "not-owner"))
        self.assertEqual(a.queue([K(u)])[0][:2], (drv.OK, ""))
        self.assertEqual(a.queue([K(u)])[0][:2], (drv.ERROR, "wrong-state"))
        self.assertEqual(a.queue([K("https://ledger.example/never")])[0][:2], (drv.ERROR, "unknown"))
        self.assertEqual(b.request([K(u)])[0][:2], (drv.NO, "queued"))
        a.done([K(u)])
        self.assertEqual(b.request([K(u)])[0][:2], (drv.NO, "done"))
        a.done([K("https://ledger.example/f")], failed=True)
        self.assertEqual(b.request([K("https://ledger.example/f")])[0][:2], (drv.NO, "failed"))
        bad = a.request([K("ftp://ledger.example/")])[0]
        self.assertEqual((bad.verdict, drv.reason_token(bad.reason)), (drv.ERROR, "bad-key"))

    def test_handover_to_a_waiter(self):
        a, b = self.producer("hand-a"), self.producer("hand-b")
        u = "https://handover.example/"
        self.assertEqual(a.request([K(u)])[0].verdict, drv.OK)
        got = []
        t = threading.Thread(target=lambda: got.append(b.request([K(u)])[0]))
        t.start()
        time.sleep(0.3)  # b is waiting; now a leaves: the key passes to b
        a.close()
        t.join(20)
        self.assertEqual(got[0][:2], (drv.OK, "handover"))

    # --- submitting and running jobs --------------------------------------------

    def test_submit_statuses(self):
        p = self.producer("submit")
        h = {"suite": "submit"}  # no worker has it: the jobs stay queued
        r = p.submit([("news", "html", "https://submit.example/", h), ("news", "html", "HTTPS://Submit.EXAMPLE:443/#x", h),
                      ("news", "html", "mailto:x", h)])
        self.assertEqual(r[0].status, drv.S_ACCEPTED)
        self.assertEqual(r[0].fingerprint, fingerprint("news", "html", normalize("https://submit.example/")))
        self.assertEqual((r[1].status, r[1].job_id, r[1].reason), (drv.S_DUPLICATE, r[0].job_id, "queued"))
        self.assertEqual((r[2].status, r[2].job_id, drv.reason_token(r[2].reason)), (drv.S_ERROR, 0, "bad-key"))
        # A key held through a ledger REQUEST: the submit waits, then is duplicate once the holder finishes it.
        holder = self.producer("submit-holder")
        u = "https://submit.example/held"
        self.assertEqual(holder.request([K(u)])[0].verdict, drv.OK)
        self.assertEqual(p.submit([("news", "html", u, h)], wait=False)[0][::3], (drv.S_WAIT, "requested"))
        holder.done([K(u)])
        self.assertEqual(eventually(lambda: p.submit([("news", "html", u, h)])[0]).status, drv.S_DUPLICATE)

    def test_worker_outcomes_links_and_progress(self):
        outcomes = {
            "/ok": lambda job: Ok(output="page " + job.url, links=[("news", "html", "https://jobs.example/linked", SUITE)]),
            "/linked": lambda job: b"linked",
            "/external": lambda job: (_ for _ in ()).throw(External("HTTP 404")),
            "/internal": lambda job: (_ for _ in ()).throw(RuntimeError("boom")),
            "/throttled": lambda job: Throttled(retry_after=0.5, error="HTTP 429"),
        }
        # Every job of this suite carries the header suite=outcomes, which only this worker has;
        # the bare workers of the other tests have no headers, so they can take none of them.
        SUITE = {"suite": "outcomes"}
        seen = queue.Queue()
        w = Worker(self.server.peers, peer_id="outcomes", slots=4, headers={"lang": "en", "suite": "outcomes"})

        @w.handler
        def run(job):
            job.progress("working on " + job.url)
            seen.put((job.url, job.attempt))
            path = job.url[len("https://jobs.example"):]
            if path == "/throttled" and job.attempt > 1:
                return None  # second time lucky
            return outcomes[path](job)

        w.start()
        self.addCleanup(w.close)
        p = self.producer("outcomes-p")
        urls = ["https://jobs.example" + s for s in ("/ok", "/external", "/internal", "/throttled")]
        r = p.submit([("news", "html", u, dict(SUITE, lang="en")) for u in urls])
        self.assertTrue(all(x.status == drv.S_ACCEPTED for x in r))
        acked = []
        # ok, linked, external, internal x3 (the budget), throttled x2.
        eventually(lambda: acked.extend(_drain(w.acked)) or len(acked) >= 8, what="8 results acknowledged")
        self.assertEqual(len(acked), 8, acked)
        self.assertTrue(all(a["status"] == drv.RECORDED for a in acked), acked)
        self.assertIn(1, [a["accepted"] for a in acked])  # the link
        runs = _drain(seen)
        self.assertIn("https://jobs.example/linked", [u for u, _ in runs])
        self.assertEqual(sum(1 for u, _ in runs if u.endswith("/internal")), 3)
        self.assertIn(("https://jobs.example/throttled", 2), runs)
        for kind in ("job.submitted", "job.dispatched", "job.done", "job.failed", "job.retry", "job.throttled",
                     "host.backoff", "job.progress", "worker.registered", "key.requested", "key.queued"):
            eventually(lambda: kind in self.events.kinds, what="event " + kind)

    def test_stale_and_unknown_results(self):
        r = self.raw()
        self.assertEqual(r.hello(drv.WORKER, "stale-w", slots=1)[0], "WELCOME")
        r.send(drv.encode("RESULT", 5, {"items": [{"job_id": 987654, "attempt": 1, "outcome": drv.R_OK, "output": b"", "links": []}]}))
        command, req, f = r.recv()
        self.assertEqual((command, req), ("RESULT-OK", 5))
        self.assertIn(f["items"][0]["status"], (drv.STALE, drv.UNKNOWN))

    # --- sessions and errors ----------------------------------------------------

    def test_error_codes_by_number(self):
        r = self.raw()
        r.send(drv.encode("REQUEST", 7, {"keys": [K("https://e.example/")]}))
        self.assertEqual(_code(r.recv()), (7, drv.CODE_HELLO_REQUIRED))
        self.assertEqual(r.hello(drv.PRODUCER, "errors")[0], "WELCOME")
        r.send(drv.encode("RESULT", 8, {"items": [{"job_id": 1, "attempt": 1, "outcome": 1, "output": b"", "links": []}]}))
        self.assertEqual(_code(r.recv()), (8, drv.CODE_FORBIDDEN))
        r.send([drv.PROTOCOL, b"REQUEST", (9).to_bytes(8, "big"), b"\x00\x00\x00\x05"])
        self.assertEqual(_code(r.recv()), (9, drv.CODE_MALFORMED))
        r.send([drv.PROTOCOL, b"REQUEST", (10).to_bytes(8, "big"), b"\x00\x00\x27\x11"])
        self.assertEqual(_code(r.recv()), (10, drv.CODE_TOO_LARGE))
        r.send([drv.PROTOCOL, b"FROBNICATE", (11).to_bytes(8, "big")])
        self.assertEqual(_code(r.recv()), (11, drv.CODE_UNKNOWN_COMMAND))
        r.send([b"DRV9", b"HEARTBEAT", (12).to_bytes(8, "big")])
        self.assertEqual(_code(r.recv()), (12, drv.CODE_VERSION))
        # The session survived all of that.
        r.send(drv.encode("REQUEST", 13, {"keys": [K("https://e.example/")]}))
        self.assertEqual(r.recv()[:2], ("VERDICTS", 13))

    def test_superseded_and_goodbye(self):
        first, second = self.raw(), self.raw()
        self.assertEqual(first.hello(drv.WORKER, "twin", slots=1)[0], "WELCOME")
        self.assertEqual(second.hello(drv.WORKER, "twin", slots=1)[0], "WELCOME")
        command, _, f = first.recv(skip=("HEARTBEAT", "JOB"))
        self.assertEqual((command, f["code"], f["reason"]), ("DISCONNECT", drv.CODE_CONFLICT, "superseded"))
        second.send(drv.encode("DISCONNECT", 0, {"code": 200, "reason": "bye"}))
        eventually(lambda: "worker.left" in self.events.kinds, what="worker.left")

    def test_welcome_values(self):
        r = self.raw()
        command, req, w = r.hello(drv.WORKER, "welcome-w", slots=8)
        self.assertEqual((command, req), ("WELCOME", 1))
        self.assertEqual(w["limits"], {"max_body": drv.MAX_BODY, "max_batch": drv.MAX_BATCH, "max_payload": drv.MAX_PAYLOAD})
        self.assertEqual((w["heartbeat_ms"], w["liveness"], w["slots"], w["cancel"]), (1000, 3, 8, []))
        self.assertTrue(w["server"].startswith("drover"))

    # --- the admin dialogue -------------------------------------------------------

    def test_admin_status_query_action(self):
        r = Raw(self.server.admin)
        self.addCleanup(r.close)
        self.assertEqual(r.hello(drv.CONSOLE, "py-console")[0], "WELCOME")
        r.send(drv.encode("STATUS", 2))
        command, req, t = r.recv(skip=("HEARTBEAT", "CHANGED"))
        self.assertEqual((command, req), ("TOTALS", 2))
        self.assertIn("queued", t["body"])
        r.send(drv.encode("QUERY", 3, {"body": {"view": "events", "limit": 5}}))
        command, req, page = r.recv(skip=("HEARTBEAT", "CHANGED"))
        self.assertEqual((command, req, page["body"]["view"]), ("PAGE", 3, "events"))
        for n, kind in ((4, "pause"), (5, "resume")):
            r.send(drv.encode("ACTION", n, {"body": {"kind": kind}}))
            command, req, acted = r.recv(skip=("HEARTBEAT", "CHANGED"))
            self.assertEqual((command, req, acted["body"]["affected"]), ("ACTED", n, 1))
        eventually(lambda: {"broker.paused", "broker.resumed"} <= self.events.kinds, what="pause events")
        ro = Raw(self.server.admin)
        self.addCleanup(ro.close)
        self.assertEqual(ro.hello(drv.CONSOLE, "py-ro", read_only=True)[0], "WELCOME")
        ro.send(drv.encode("ACTION", 6, {"body": {"kind": "pause"}}))
        self.assertEqual(_code(ro.recv(skip=("HEARTBEAT", "CHANGED"))), (6, drv.CODE_FORBIDDEN))


    def test_zz_every_event_kind_seen_is_documented(self):
        """Runs last: the kinds the suite caused are all in PROTOCOL.md section 14's table."""
        import os
        import re
        doc = open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "PROTOCOL.md"), encoding="utf-8").read()
        table = doc.split("<!-- event-kinds -->", 1)[1].split("\n\n", 1)[0]
        documented = set(re.findall(r"^\| `([a-z0-9._-]+)` \|", table, re.M))
        self.assertGreater(len(documented), 20)
        seen = set(self.events.kinds)
        self.assertGreaterEqual(len(seen), 15, seen)
        self.assertLessEqual(seen, documented, "kinds emitted but not documented: %s" % (seen - documented))


class Examples(unittest.TestCase):
    def test_producer_example_runs(self):
        import os
        import subprocess
        import sys
        server = Server()
        self.addCleanup(server.stop)
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run([sys.executable, os.path.join(here, "examples", "producer.py"), server.peers,
                              "https://example.com/", "https://example.com/"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"https://example.com/ +accepted +job 1")
        self.assertRegex(out.stdout, r"https://example.com/ +duplicate +job 1 queued")
        self.assertIn("asking again: no done", out.stdout)


def _code(msg):
    command, req, f = msg
    assert command == "ERROR", msg
    return req, f["code"]


def _drain(q):
    out = []
    while True:
        try:
            out.append(q.get_nowait())
        except queue.Empty:
            return out


if __name__ == "__main__":
    unittest.main()
