"""Producer: submit jobs, and use the ledger (request / queue / done) from Python."""

import os
import socket
from collections import namedtuple

from . import drv
from .session import DroverError, Session

#: One SUBMITTED item: status (drv.S_*), job id, fingerprint (16 bytes), reason.
Submitted = namedtuple("Submitted", "status job_id fingerprint reason")
#: One verdict: verdict (drv.OK, NO, WAIT, ERROR), reason, fingerprint.
Verdict = namedtuple("Verdict", "verdict reason fingerprint")


def _key(k):
    if isinstance(k, drv.Key):
        return k
    if isinstance(k, dict):
        return drv.Key(k["crawler"], k["processor"], k["url"])
    return drv.Key(*k)


def _job(j):
    """A job as SUBMIT carries it, from (crawler, processor, url[, headers[, payload]]) or a dict."""
    if isinstance(j, dict):
        key = _key(j["key"]) if "key" in j else drv.Key(j["crawler"], j["processor"], j["url"])
        return drv.job_item(key, j.get("headers", ()), j.get("payload", b""))
    return drv.job_item(drv.Key(*j[:3]), *j[3:5])


class Producer:
    """A producer session on drover's peers socket.

    Every method is a batch call and blocks until answered (at most
    ``timeout`` seconds, then :class:`TimeoutError`). The session heartbeats
    in the background, so keys it holds stay its own between calls, and it
    reconnects by itself; calls not answered when a connection ends are sent
    again (SUBMIT is idempotent per key)::

        with Producer("tcp://127.0.0.1:5570") as p:
            for s in p.submit([("news", "html", "https://example.com/")]):
                print(s.status == drv.S_ACCEPTED, s.job_id)
    """

    def __init__(self, endpoint="tcp://127.0.0.1:5570", peer_id=None, timeout=30.0, heartbeat_ms=1000, context=None):
        self.timeout = timeout
        self.session = Session(endpoint, drv.PRODUCER, peer_id or "py-producer-%s-%d" % (socket.gethostname(), os.getpid()),
                               heartbeat_ms=heartbeat_ms, context=context)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Says goodbye: keys this producer holds in requested pass to their waiters."""
        self.session.close()

    def _call(self, command, fields, settle=None):
        return self.session.call(command, fields, settle).result(self.timeout)

    def _batches(self, items):
        n = drv.MAX_BATCH
        if self.session.welcome:
            n = self.session.welcome["limits"]["max_batch"]
        for i in range(0, len(items), n):
            yield items[i:i + n]

    def submit(self, jobs, wait=True):
        """Submits jobs; returns one :class:`Submitted` per job, in order.

        With ``wait`` (the default) a job that got status wait (another
        session holds its key in requested) is settled first: duplicate
        when the holder finishes, accepted with a job id when it dies."""
        out = []
        for batch in self._batches([_job(j) for j in jobs]):
            settle = (lambda items: all(it["status"] != drv.S_WAIT for it in items)) if wait else None
            r = self._call("SUBMIT", {"jobs": batch}, settle)
            out += [Submitted(it["status"], it["job_id"], it["fingerprint"], it["reason"]) for it in r["items"]]
        return out

    def _ledger(self, command, items, settle=None):
        out = []
        field = "items" if command == "DONE" else "keys"
        for batch in self._batches(items):
            r = self._call(command, {field: batch}, settle)
            out += [Verdict(it["verdict"], it["reason"], it["fingerprint"]) for it in r["items"]]
        return out

    def request(self, keys, wait=True):
        """Asks for keys before doing their work: ok means this session now owns the key
        (do the work, then :meth:`queue` or :meth:`done` it), no means someone else has it
        queued or done. With ``wait`` a key another session holds is waited for (its
        ANSWER: ok ``handover``, or no); without, its verdict is WAIT."""
        settle = (lambda items: all(it["verdict"] != drv.WAIT for it in items)) if wait else None
        return self._ledger("REQUEST", [_key(k) for k in keys], settle)

    def queue(self, keys):
        """Says this session handed the keys' work on (they become queued)."""
        return self._ledger("QUEUE", [_key(k) for k in keys])

    def done(self, keys, failed=False):
        """Marks keys done (outcome failed with ``failed``), whatever their state."""
        o = drv.DONE_FAILED if failed else drv.DONE_OK
        return self._ledger("DONE", [{"key": _key(k), "outcome": o} for k in keys])


__all__ = ["Producer", "Submitted", "Verdict", "DroverError"]
