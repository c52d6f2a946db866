"""Scrapy on a drover fleet: a scheduler and a dupefilter that use drover's
ledger and job queue (as scrapy-redis does with Redis), so that several
Scrapy processes, on one machine or many, crawl one site together and fetch
each page once. An existing spider needs two settings::

    SCHEDULER = "drover.scrapy.Scheduler"
    DUPEFILTER_CLASS = "drover.scrapy.DupeFilter"

and, when the coordinator is not on this machine's default port,
``DROVER_ENDPOINT = "tcp://coordinator:5570"``.

How it works: every request the spider schedules is SUBMITted to drover as
a job with the key (spider name, ``scrapy``, URL) and the serialised request
as payload. drover keeps one job per key — a URL another process already
scheduled comes back duplicate and is dropped (the dupefilter logs it) —
and dispatches each job to one spider process, which is a drover worker
with ``CONCURRENT_REQUESTS`` slots: the request comes back out of
``next_request`` there, and when it has left the downloader the job's result
is reported (ok with the HTTP status, or an internal failure that drover
retries, on this or another process). A job submitted without a payload
(``drover submit``) becomes a plain GET of its URL with the spider's
``parse``. A process closes once it has been idle — no job held, none
received — for ``DROVER_IDLE_CLOSE`` seconds (default 5).

``DupeFilter`` works alone too (with Scrapy's own scheduler): a URL is seen
unless this process wins drover's ledger REQUEST for its key.

Settings: ``DROVER_ENDPOINT`` (default ``tcp://127.0.0.1:5570``),
``DROVER_PROCESSOR`` (default ``scrapy``), ``DROVER_IDLE_CLOSE`` (seconds,
default 5), ``DROVER_WORKER_ID`` (default: host name and process id).
Requests are one per URL: two requests for one URL with different methods
or bodies are one key.
"""

import base64
import json
import logging
import os
import queue
import socket
import threading
import time

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.request import request_from_dict

from . import drv
from .producer import Producer
from .worker import Internal, Ok, Worker

log = logging.getLogger("drover.scrapy")


def _plain(o):
    """A serialised request as JSON can hold it: bytes tagged in base64, dicts with
    non-string keys (headers) as tagged pairs, unknown objects as their text."""
    if isinstance(o, (bytes, bytearray)):
        return {"__b64__": base64.b64encode(bytes(o)).decode()}
    if isinstance(o, dict):
        if all(isinstance(k, str) for k in o):
            return {k: _plain(v) for k, v in o.items()}
        return {"__pairs__": [[_plain(k), _plain(v)] for k, v in o.items()]}
    if isinstance(o, (list, tuple)):
        return [_plain(v) for v in o]
    if o is None or isinstance(o, (str, int, float, bool)):
        return o
    return str(o)


def _unplain(o):
    if isinstance(o, dict):
        if set(o) == {"__b64__"}:
            return base64.b64decode(o["__b64__"])
        if set(o) == {"__pairs__"}:
            return {_unplain(k): _unplain(v) for k, v in o["__pairs__"]}
        return {k: _unplain(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_unplain(v) for v in o]
    return o


def _encode(d):
    return json.dumps(_plain(d), separators=(",", ":")).encode("utf-8")


def _decode(payload):
    return _unplain(json.loads(payload.decode("utf-8")))


class _Held:
    """A drover job this process runs as a Scrapy request."""

    def __init__(self, job):
        self.job = job
        self.left = 0      # times its request left the downloader
        self.retried = 0   # the value of left when Scrapy last rescheduled it
        self.outcome = None
        self.finished = threading.Event()

    def finish(self, outcome):
        if not self.finished.is_set():
            self.outcome = outcome
            self.finished.set()


class Scheduler:
    """A Scrapy scheduler whose queue is drover's: see the module's documentation."""

    def __init__(self, crawler):
        self.crawler = crawler
        s = crawler.settings
        self.endpoint = s.get("DROVER_ENDPOINT", "tcp://127.0.0.1:5570")
        self.processor = s.get("DROVER_PROCESSOR", "scrapy")
        self.idle_close = s.getfloat("DROVER_IDLE_CLOSE", 5.0)
        self.slots = s.getint("CONCURRENT_REQUESTS", 16)
        self.worker_id = s.get("DROVER_WORKER_ID") or "scrapy-%s-%d" % (socket.gethostname(), os.getpid())
        self.incoming = queue.Queue()  # _Held jobs dispatched to this process, not yet handed to Scrapy
        self.held = {}                 # job id -> _Held, while Scrapy works on it
        self.local = []                # retries of held jobs (dont_filter), handed out first
        self.last_job = time.monotonic()
        self.lock = threading.Lock()
        self.df = None
        self.spider = None
        self.producer = self.worker = None

    @classmethod
    def from_crawler(cls, crawler):
        sched = cls(crawler)
        crawler.signals.connect(sched._response_received, signal=signals.response_received)
        crawler.signals.connect(sched._left_downloader, signal=signals.request_left_downloader)
        crawler.signals.connect(sched._dropped, signal=signals.request_dropped)
        crawler.signals.connect(sched._idle, signal=signals.spider_idle)
        return sched

    # --- Scrapy's scheduler interface ---------------------------------------

    def open(self, spider):
        self.spider = spider
        from scrapy.utils.misc import load_object
        df_cls = load_object(self.crawler.settings["DUPEFILTER_CLASS"])
        self.df = df_cls.from_settings(self.crawler.settings) if hasattr(df_cls, "from_settings") else df_cls()
        self.producer = Producer(self.endpoint, peer_id=self.worker_id + "-submit")
        self.worker = Worker(self.endpoint, peer_id=self.worker_id, slots=self.slots)
        self.worker.handler(self._run_job)
        self.worker.start()
        log.info("drover: spider %s joins the fleet at %s as %s (%d slots)", spider.name, self.endpoint,
                 self.worker_id, self.slots)

    def close(self, reason):
        with self.lock:
            held = list(self.held.values())
        for h in held:
            h.finish(Internal(error="spider closed: " + reason))
        while True:  # dispatched but never handed to Scrapy: back to drover
            try:
                self.incoming.get_nowait().finish(Internal(error="spider closed: " + reason))
            except queue.Empty:
                break
        self.worker.close()
        self.producer.close()
        if self.df:
            self.df.close(reason)

    def has_pending_requests(self):
        return bool(self.local) or not self.incoming.empty()

    def enqueue_request(self, request):
        job_id = request.meta.get("drover_job")
        if job_id is not None and request.dont_filter:
            with self.lock:
                h = self.held.get(job_id)
            if h is not None and not h.finished.is_set():
                h.retried = h.left
                self.local.append(request)  # a retry of a job this process holds
                return True
        d = request.to_dict(spider=self.spider)
        d["meta"].pop("drover_job", None)
        s = self.producer.submit([(self.spider.name, self.processor, request.url, [], _encode(d))])[0]
        if s.status == drv.S_ACCEPTED:
            self.crawler.stats.inc_value("drover/submitted", spider=self.spider)
            return True
        if s.status == drv.S_DUPLICATE:
            self.df.log(request, self.spider)
        else:
            log.warning("drover: %s not scheduled: %s", request.url, s.reason)
        return False

    def next_request(self):
        if self.local:
            return self.local.pop(0)
        try:
            h = self.incoming.get_nowait()
        except queue.Empty:
            return None
        job = h.job
        try:
            if job.payload:
                req = request_from_dict(_decode(job.payload), spider=self.spider)
            else:
                req = Request(job.url, callback=self.spider.parse)
        except Exception as e:  # a payload this spider cannot read: the job's fault
            h.finish(Internal(error="cannot rebuild the request: %s" % e))
            return None
        req.meta["drover_job"] = job.id
        with self.lock:
            self.held[job.id] = h
        return req

    # --- signals -------------------------------------------------------------

    def _held_of(self, request):
        job_id = request.meta.get("drover_job")
        with self.lock:
            return self.held.get(job_id)

    def _response_received(self, response, request, spider):
        h = self._held_of(request)
        if h is not None:
            h.finish(Ok(output="HTTP %d" % response.status))
            with self.lock:
                self.held.pop(h.job.id, None)

    def _left_downloader(self, request, spider):
        # A response is announced after the request left the downloader; a failure is not
        # announced at all. So: if no response came soon after, and Scrapy did not schedule
        # a retry of the request, the download failed.
        h = self._held_of(request)
        if h is None:
            return
        h.left += 1
        from twisted.internet import reactor
        reactor.callLater(1.0, self._check_failed, h, h.left)

    def _check_failed(self, h, left):
        if h.finished.is_set() or h.left != left or h.retried >= left:
            return  # answered, left again, or being retried
        h.finish(Internal(error="download failed"))
        with self.lock:
            self.held.pop(h.job.id, None)

    def _dropped(self, request, spider):
        h = self._held_of(request)
        if h is not None:
            h.finish(Ok(output="dropped by the spider"))
            with self.lock:
                self.held.pop(h.job.id, None)

    def _idle(self, spider):
        with self.lock:
            busy = bool(self.held)
        if busy or self.has_pending_requests() or time.monotonic() - self.last_job < self.idle_close:
            raise DontCloseSpider

    # --- on a worker slot thread -------------------------------------------------

    def _wake_engine(self):
        """Asks Scrapy's engine for the next request now, not at its next 5 s heartbeat."""
        from twisted.internet import reactor
        slot = getattr(self.crawler.engine, "slot", None)
        if slot is not None and hasattr(slot, "nextcall"):
            reactor.callFromThread(slot.nextcall.schedule)

    def _run_job(self, job):
        """Hands the job to Scrapy and waits until Scrapy is done with it."""
        h = _Held(job)
        self.last_job = time.monotonic()
        self.incoming.put(h)
        self._wake_engine()
        h.finished.wait()
        self.last_job = time.monotonic()
        return h.outcome


class DupeFilter:
    """A Scrapy dupefilter on drover's ledger: a request is new only if this process wins
    the REQUEST for its key (spider name, DROVER_PROCESSOR, URL), which it then queues.
    With :class:`Scheduler`, SUBMIT does the same in one step and this only logs."""

    def __init__(self, endpoint="tcp://127.0.0.1:5570", processor="scrapy", debug=False):
        self.endpoint, self.processor, self.debug = endpoint, processor, debug
        self.producer = None
        self.logged = 0

    @classmethod
    def from_settings(cls, settings):
        return cls(settings.get("DROVER_ENDPOINT", "tcp://127.0.0.1:5570"),
                   settings.get("DROVER_PROCESSOR", "scrapy"), settings.getbool("DUPEFILTER_DEBUG"))

    @classmethod
    def from_crawler(cls, crawler):
        return cls.from_settings(crawler.settings)

    def request_seen(self, request, spider=None):
        if self.producer is None:
            self.producer = Producer(self.endpoint)
        name = spider.name if spider is not None else "scrapy"
        key = (name, self.processor, request.url)
        v = self.producer.request([key], wait=False)[0]
        if v.verdict != drv.OK:
            return True
        self.producer.queue([key])
        return False

    def open(self):
        pass

    def close(self, reason):
        if self.producer is not None:
            self.producer.close()

    def log(self, request, spider):
        if self.debug or self.logged == 0:
            log.debug("drover: filtered duplicate request %s (another process has it)", request.url)
        self.logged += 1
        spider.crawler.stats.inc_value("dupefilter/filtered", spider=spider)
