"""Worker: run drover's jobs in Python.

Decorate a function, or subclass and override :meth:`Worker.handle`::

    w = Worker("tcp://127.0.0.1:5570", slots=4, headers={"lang": "en"})

    @w.handler
    def fetch(job):
        body = download(job.url)
        return Ok(output=body, links=find_links(body))   # or bytes, str, None

    w.run()

A handler's return value is the job's outcome: None, bytes or str mean ok
with that output; :class:`Ok`, :class:`Internal`, :class:`External` and
:class:`Throttled` say it explicitly. Raising :class:`Throttled` or
:class:`External` does the same; any other exception is an internal failure
(retried, charged to the job's failure budget).
"""

import logging
import os
import queue
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

from . import drv
from .session import Session

log = logging.getLogger("drover")


class Outcome(Exception):
    """How a job ended (also raisable from a handler)."""

    code = drv.R_OK

    def __init__(self, error="", output=b"", links=(), retry_after=0.0):
        super().__init__(error)
        self.error, self.output, self.links, self.retry_after = error, output, list(links), retry_after


class Ok(Outcome):
    """Done: ``output`` (bytes or str) and ``links``, discovered work submitted atomically with the
    result: URLs (same crawler and processor as the job), (crawler, processor, url[, headers[, payload]])
    tuples, or dicts."""

    def __init__(self, output=b"", links=()):
        super().__init__(output=output, links=links)


class Internal(Outcome):
    """The worker's fault: the job is retried and charged one failure."""

    code = drv.R_INTERNAL


class External(Outcome):
    """The job's fault (e.g. HTTP 404): the job fails at once."""

    code = drv.R_EXTERNAL


class Throttled(Outcome):
    """The site said slow down: the job's host backs off for ``retry_after`` seconds (0: the
    server's back-off) and the job is requeued, not charged."""

    code = drv.R_THROTTLED

    def __init__(self, retry_after=0.0, error="throttled"):
        super().__init__(error=error, retry_after=retry_after)


class Job:
    """A job to run: ``id``, ``attempt``, ``key`` (crawler, processor, url), ``headers`` (dict),
    ``payload`` (bytes); ``cancelled`` is set when the server no longer wants it."""

    def __init__(self, worker, item):
        self.id, self.attempt = item["job_id"], item["attempt"]
        self.key = item["key"]
        self.crawler, self.processor, self.url = self.key
        self.headers = dict(item["headers"])
        self.payload = item["payload"]
        self.cancelled = threading.Event()
        self._worker = worker

    def progress(self, text):
        """Tells the console how the job is doing (at most about once a second)."""
        self._worker.session.post("PROGRESS", {"job_id": self.id, "attempt": self.attempt, "text": text[:drv.MAX_TEXT]})

    def __repr__(self):
        return "Job(%d, attempt %d, %s)" % (self.id, self.attempt, self.url)


def _link(job, l):
    if isinstance(l, str):
        return drv.job_item(drv.Key(job.crawler, job.processor, l))
    if isinstance(l, dict):
        key = drv.Key(l.get("crawler", job.crawler), l.get("processor", job.processor), l["url"])
        return drv.job_item(key, l.get("headers", ()), l.get("payload", b""))
    return drv.job_item(drv.Key(*l[:3]), *l[3:5])


class Worker:
    """A worker session: ``slots`` jobs at once (each in its own thread), ``headers`` its
    capabilities (a job's headers must be satisfied by them), ``peer_id`` its stable id
    (the same across restarts, so a restarted worker re-announces what it held)."""

    def __init__(self, endpoint="tcp://127.0.0.1:5570", peer_id=None, slots=1, headers=None,
                 heartbeat_ms=1000, context=None):
        self.endpoint, self.slots = endpoint, slots
        self.peer_id = peer_id or "py-worker-%s-%d" % (socket.gethostname(), os.getpid())
        self.headers = list((headers or {}).items()) if isinstance(headers, dict) or headers is None else list(headers)
        self.heartbeat_ms, self.context = heartbeat_ms, context
        self._handler = None
        self.lock = threading.Lock()
        self.running = {}   # job id -> Job, running now
        self.unacked = {}   # job id -> result item sent (or to send), not yet acknowledged
        self.acked = queue.Queue()  # RESULT-OK items, for tests and callers
        self.done = threading.Event()
        self.session = None
        self.pool = None

    def handler(self, fn):
        """Decorator: fn(job) runs each job."""
        self._handler = fn
        return fn

    def handle(self, job):
        """Runs one job; override it, or use :meth:`handler`."""
        if self._handler is None:
            raise NotImplementedError("no handler: decorate a function with @worker.handler or override handle")
        return self._handler(job)

    # --- lifecycle ------------------------------------------------------------

    def start(self):
        """Connects and starts taking jobs in the background."""
        self.pool = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="drover-job")
        self.session = Session(self.endpoint, drv.WORKER, self.peer_id, slots=self.slots, headers=self.headers,
                               heartbeat_ms=self.heartbeat_ms, on_message=self._on_message,
                               on_welcome=self._on_welcome, held=self._held, context=self.context)
        return self

    def run(self):
        """Runs until :meth:`stop` (or Ctrl-C), or until the server ends the session for good
        (``session.ended``: DISCONNECT 409 superseded, 200 drained, 403)."""
        self.start()
        try:
            while not self.done.wait(0.5) and self.session.ended is None:
                pass  # ended: the server drained or superseded it, or refused it for good
        except KeyboardInterrupt:
            pass
        finally:
            self.close()

    def stop(self):
        """Makes :meth:`run` return."""
        self.done.set()

    def close(self, timeout=5.0):
        """Finishes running jobs (their results are sent), then says goodbye."""
        self.done.set()
        if self.pool:
            self.pool.shutdown(wait=True)
        if self.session:
            self.session.close(timeout)

    # --- on the session's I/O thread ----------------------------------------

    def _held(self):
        """The runs (job id, attempt) received and not yet acknowledged, for HELLO."""
        with self.lock:
            return {(j.id, j.attempt) for j in self.running.values()} | {(i["job_id"], i["attempt"]) for i in self.unacked.values()}

    def _on_welcome(self, w):
        with self.lock:
            for run in w["cancel"]:
                self._cancel(run)

    def _on_message(self, command, req, fields):
        if command == "JOB":
            for item in fields["jobs"]:
                job = Job(self, item)
                with self.lock:
                    self.running[job.id] = job
                self.pool.submit(self._run_job, job)
        elif command == "CANCEL":
            with self.lock:
                for run in fields["runs"]:
                    self._cancel(run)

    def _cancel(self, run):
        """Drops a run the server no longer wants (self.lock held): a running job is told."""
        it = self.unacked.get(run["job_id"])
        if it is not None and it["attempt"] == run["attempt"]:
            del self.unacked[run["job_id"]]
        job = self.running.get(run["job_id"])
        if job is not None and job.attempt == run["attempt"]:
            job.cancelled.set()

    # --- on a slot thread -------------------------------------------------------

    def _run_job(self, job):
        try:
            out = self.handle(job)
        except Outcome as o:
            out = o
        except Exception as e:  # the worker's fault: internal
            log.exception("drover: job %d failed", job.id)
            out = Internal(error="%s: %s" % (type(e).__name__, e))
        if out is None or isinstance(out, (bytes, bytearray, str)):
            out = Ok(output=out or b"")
        output = out.output.encode("utf-8") if isinstance(out.output, str) else bytes(out.output)
        item = {"job_id": job.id, "attempt": job.attempt, "outcome": out.code, "error": str(out.error)[:drv.MAX_TEXT],
                "retry_after_ms": int(out.retry_after * 1000) if out.code == drv.R_THROTTLED else 0,
                "output": output[:drv.MAX_OUTPUT],
                "links": [_link(job, l) for l in out.links] if out.code == drv.R_OK else []}
        with self.lock:
            self.running.pop(job.id, None)
            self.unacked[job.id] = item
        f = self.session.call("RESULT", {"items": [item]})
        f.add_done_callback(lambda f, jid=job.id: self._acked(jid, f))

    def _acked(self, job_id, f):
        with self.lock:
            self.unacked.pop(job_id, None)
        if f.exception() is None:
            for it in f.result()["items"]:
                self.acked.put(it)


__all__ = ["Worker", "Job", "Outcome", "Ok", "Internal", "External", "Throttled"]
