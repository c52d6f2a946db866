"""The client against a scripted server (a ROUTER speaking DRV/2 through the
client's codec) for what a real `drover serve` cannot be made to do on
demand: ERROR 429 (slow down), 500 (internal) and 503 (unavailable), after
which a request goes again (section 7), and SUBMITTED's `max-jobs`."""

import logging
import threading
import unittest

try:
    import zmq
except ImportError:
    raise unittest.SkipTest("pyzmq is not installed (Debian: python3-zmq)")

from drover import drv, Producer, Worker
from drover.url import fingerprint
from tests import coverage  # noqa: F401 (records what this test exercises)


class Scripted:
    """A ROUTER that answers HELLO with WELCOME and each request with the next reply of
    ``script[command]`` (a list of functions (req, fields) -> frames); ``after_welcome``
    messages (frames) follow the WELCOME."""

    def __init__(self, script, after_welcome=()):
        self.script = {k: list(v) for k, v in script.items()}
        self.after_welcome = list(after_welcome)
        self.seen = []
        self.sock = zmq.Context.instance().socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = "tcp://127.0.0.1:%d" % port
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            if not self.sock.poll(50):
                continue
            ident, *frames = self.sock.recv_multipart()
            command, req, fields = drv.decode(frames)
            self.seen.append(command)
            if command == "HELLO":
                # A long liveness: this server sends no heartbeats.
                reply = drv.encode("WELCOME", req, {
                    "session": 1, "heartbeat_ms": 100, "liveness": 100, "slots": fields["slots"],
                    "limits": {"max_body": drv.MAX_BODY, "max_batch": drv.MAX_BATCH, "max_payload": drv.MAX_PAYLOAD},
                    "server": "scripted", "cancel": []})
            elif self.script.get(command):
                reply = self.script[command].pop(0)(req, fields)
            else:
                continue
            self.sock.send_multipart([ident] + reply)
            if command == "HELLO":
                for m in self.after_welcome:
                    self.sock.send_multipart([ident] + m)
                self.after_welcome = []

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()


def error(code):
    return lambda req, fields: drv.encode("ERROR", req, {"code": code, "message": "scripted"})


class RetryCodes(unittest.TestCase):
    def setUp(self):
        logging.getLogger("drover").setLevel(logging.CRITICAL)

    def test_submit_goes_again_after_429_500_503(self):
        u = "https://scripted.example/"
        u2 = "https://scripted.example/2"
        fp, fp2 = fingerprint("news", "html", u), fingerprint("news", "html", u2)
        s = Scripted({"SUBMIT": [error(drv.CODE_SLOW_DOWN), error(drv.CODE_INTERNAL), error(drv.CODE_UNAVAILABLE),
                                 lambda req, f: drv.encode("SUBMITTED", req, {"items": [
                                     {"status": drv.S_ERROR, "job_id": 0, "fingerprint": fp, "reason": "max-jobs"},
                                     {"status": drv.S_ERROR, "job_id": 0, "fingerprint": fp2,
                                      "reason": "job-ids-exhausted"}]})]})
        self.addCleanup(s.close)
        with Producer(s.endpoint, peer_id="scripted-p", timeout=20) as p:
            r = p.submit([("news", "html", u), ("news", "html", u2)])
        self.assertEqual([(x.status, x.reason) for x in r],
                         [(drv.S_ERROR, "max-jobs"), (drv.S_ERROR, "job-ids-exhausted")])
        self.assertEqual(s.seen.count("SUBMIT"), 4, s.seen)

    def test_a_result_goes_again_after_500(self):
        """A worker keeps a result the server could not record (500) and sends it again."""
        run = {"job_id": 7, "attempt": 1}
        job = drv.encode("JOB", 0, {"jobs": [dict(run, key=drv.Key("news", "html", "https://scripted.example/"),
                                                  headers=[], payload=b"")]})
        s = Scripted({"RESULT": [error(drv.CODE_INTERNAL),
                                 lambda req, f: drv.encode("RESULT-OK", req, {"items": [
                                     dict(run, status=drv.RECORDED, accepted=0, duplicates=0)]})]}, after_welcome=[job])
        self.addCleanup(s.close)
        w = Worker(s.endpoint, peer_id="scripted-w", slots=1)
        w.handler(lambda job: b"done")
        w.start()
        self.addCleanup(w.close)
        ack = w.acked.get(timeout=20)
        self.assertEqual((ack["job_id"], ack["status"]), (7, drv.RECORDED))
        self.assertEqual(s.seen.count("RESULT"), 2, s.seen)


if __name__ == "__main__":
    unittest.main()
