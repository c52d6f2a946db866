"""DRV/2, drover's wire protocol (docs/PROTOCOL.md): a complete codec.

Messages are ``(command, req, fields)``: the command name (``"SUBMIT"``), the
request id, and a dict of fields named as the conformance kit names them
(conformance/README.md): snake_case, ``*_ms`` for milliseconds, ``bytes``
for payloads, outputs and fingerprints, :class:`Key` for keys, lists of
``(name, value)`` for headers, and ``body`` for the JSON value of an admin
command.

:func:`decode` validates a message completely (every limit, character
class, enumeration and field rule of the document) and raises
:class:`Malformed` with the ERROR code a server answers; :func:`encode`
builds the frames and validates them the same way, so nothing DRV/2 cannot
carry leaves this module. Standard library only.
"""

import json
import struct
from collections import namedtuple

PROTOCOL = b"DRV2"

# HELLO role
WORKER, PRODUCER, CONSOLE = 1, 2, 3
# verdicts
OK, NO, WAIT, ERROR = 1, 2, 3, 4
# DONE outcome
DONE_OK, DONE_FAILED = 1, 2
# SUBMITTED status
S_ACCEPTED, S_DUPLICATE, S_ERROR, S_WAIT = 1, 2, 3, 4
# RESULT outcome
R_OK, R_INTERNAL, R_EXTERNAL, R_THROTTLED = 1, 2, 3, 4
# RESULT-OK status
RECORDED, STALE, UNKNOWN = 1, 2, 3

ROLES = {1: "worker", 2: "producer", 3: "console"}
VERDICTS = {1: "ok", 2: "no", 3: "wait", 4: "error"}
DONE_OUTCOMES = {1: "ok", 2: "failed"}
SUBMIT_STATUSES = {1: "accepted", 2: "duplicate", 3: "error", 4: "wait"}
OUTCOMES = {1: "ok", 2: "internal", 3: "external", 4: "throttled"}
RESULT_STATUSES = {1: "recorded", 2: "stale", 3: "unknown"}

# Error codes (section 7).
CODE_OK = 200
CODE_MALFORMED = 400
CODE_HELLO_REQUIRED = 401
CODE_FORBIDDEN = 403
CODE_NOT_FOUND = 404
CODE_TIMEOUT = 408
CODE_CONFLICT = 409
CODE_EVICTED = 410
CODE_TOO_LARGE = 413
CODE_SLOW_DOWN = 429
CODE_INTERNAL = 500
CODE_UNKNOWN_COMMAND = 501
CODE_UNAVAILABLE = 503
CODE_VERSION = 505
CODE_NAMES = {
    200: "ok", 400: "malformed", 401: "hello required", 403: "forbidden", 404: "not found",
    408: "timeout", 409: "conflict", 410: "evicted", 413: "too large", 429: "slow down",
    500: "internal", 501: "unknown command", 503: "unavailable", 505: "version not supported",
}

# Limits (section 8).
MAX_BODY = 16 << 20
MAX_BATCH = 10000
MAX_LINKS_PER_RESULT = 10000
MAX_LINKS = 100000
MAX_NAME = 255
MAX_URL = 8192
MAX_HEADERS = 64
MAX_HEADER_NAME = 128
MAX_HEADER_VALUE = 1024
MAX_PAYLOAD = 1 << 20
MAX_OUTPUT = 4 << 20
MAX_ID = 128
MAX_HOST = 255
MAX_REASON = 255
MAX_TEXT = 4096
MAX_SLOTS = 4096
MAX_FILTER = 1024
MAX_TARGET = 255
MAX_TOPIC = 64
MAX_ROBOTS = 512 << 10

# Commands: name -> (has a body, body is JSON).
COMMANDS = {
    "HELLO": (True, False), "WELCOME": (True, False), "HEARTBEAT": (False, False),
    "DISCONNECT": (True, False), "ERROR": (True, False), "REQUEST": (True, False),
    "QUEUE": (True, False), "DONE": (True, False), "VERDICTS": (True, False),
    "ANSWER": (True, False), "SUBMIT": (True, False), "SUBMITTED": (True, False),
    "JOB": (True, False), "CANCEL": (True, False), "RESULT": (True, False),
    "RESULT-OK": (True, False), "PROGRESS": (True, False), "QUERY": (True, True),
    "PAGE": (True, True), "STATUS": (False, False), "TOTALS": (True, True),
    "ACTION": (True, True), "ACTED": (True, True), "CHANGED": (False, False),
    "ROBOTS": (True, False),
}
JSON_COMMANDS = frozenset(c for c, (_, j) in COMMANDS.items() if j)

VIEWS = ("workers", "jobs", "waiters", "retries", "events", "results", "crawls")
ACTIONS_WITH_TARGETS = ("evict", "drain", "undrain", "requeue")
ACTIONS_WITHOUT = ("requeue-failed", "pause", "resume", "cancel", "define-crawl")
ACTIONS_WITH_CRAWLER = ("pause", "resume", "requeue-failed", "cancel")
# Why a job waits: the words of a JobRow's "wait" (section 13). A newer server may
# send others: keep them as they are.
WAITS = ("unroutable", "paused", "polite", "paged", "retry", "host-backoff", "reclaim")

Key = namedtuple("Key", "crawler processor url")


def job_item(key, headers=(), payload=b""):
    """A job as SUBMIT (or a RESULT's links) carries it: headers as a list of
    (name, value) pairs (a dict is taken too), the payload as bytes (text is
    encoded as UTF-8)."""
    if isinstance(headers, dict):
        headers = list(headers.items())
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    return {"key": key, "headers": list(headers), "payload": payload}


class Malformed(ValueError):
    """A message DRV/2 does not allow; ``code`` is the ERROR code (400, 413, 501, 505)."""

    def __init__(self, code, message, req=0):
        super().__init__("drv %d %s: %s" % (code, CODE_NAMES.get(code, "?"), message))
        self.code, self.message, self.req = code, message, req


# --- encoding -------------------------------------------------------------

def _str(v):
    b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
    if len(b) > 0xFFFF:
        raise Malformed(CODE_TOO_LARGE, "string of %d bytes" % len(b))
    return struct.pack(">H", len(b)) + b


def _blob(b):
    return struct.pack(">I", len(b)) + bytes(b)


def _key(k):
    k = Key(*k) if not isinstance(k, dict) else Key(k["crawler"], k["processor"], k["url"])
    return _str(k.crawler) + _str(k.processor) + _str(k.url)


def _headers(h):
    h = list(h.items()) if isinstance(h, dict) else list(h or ())
    return struct.pack(">H", len(h)) + b"".join(_str(n) + _str(v) for n, v in h)


def _run(r):
    """A run: {"job_id", "attempt"} or (job_id, attempt)."""
    return struct.pack(">QI", *((r["job_id"], r["attempt"]) if isinstance(r, dict) else r))


def _runs(runs):
    runs = list(runs or ())
    return struct.pack(">I", len(runs)) + b"".join(_run(r) for r in runs)


def _submit_item(j):
    return _key(j["key"]) + _headers(j.get("headers", ())) + _blob(j.get("payload", b""))


def _count(items):
    return struct.pack(">I", len(items))


def _body(command, f):
    f = f or {}
    if command == "HELLO":
        return (struct.pack(">BB", f["role"], 1 if f.get("read_only") else 0) + _str(f["id"])
                + _str(f.get("host", "")) + struct.pack(">II", f.get("slots", 0), f.get("heartbeat_ms", 0))
                + _headers(f.get("headers", ())) + _runs(f.get("held", ())))
    if command == "WELCOME":
        lim = f["limits"]
        return (struct.pack(">QIHIIII", f["session"], f["heartbeat_ms"], f["liveness"], f.get("slots", 0),
                            lim["max_body"], lim["max_batch"], lim["max_payload"])
                + _str(f.get("server", "")) + _runs(f.get("cancel", ())))
    if command == "DISCONNECT":
        return struct.pack(">H", f["code"]) + _str(f.get("reason", ""))
    if command == "ERROR":
        return struct.pack(">H", f["code"]) + _str(f.get("message", ""))
    if command in ("REQUEST", "QUEUE"):
        return _count(f["keys"]) + b"".join(_key(k) for k in f["keys"])
    if command == "DONE":
        return _count(f["items"]) + b"".join(_key(i["key"]) + bytes([i["outcome"]]) for i in f["items"])
    if command in ("VERDICTS", "ANSWER"):
        return _count(f["items"]) + b"".join(
            bytes(i["fingerprint"]) + bytes([i["verdict"]]) + _str(i.get("reason", "")) for i in f["items"])
    if command == "SUBMIT":
        return _count(f["jobs"]) + b"".join(_submit_item(j) for j in f["jobs"])
    if command == "SUBMITTED":
        return _count(f["items"]) + b"".join(
            struct.pack(">BQ", i["status"], i.get("job_id", 0)) + bytes(i["fingerprint"]) + _str(i.get("reason", ""))
            for i in f["items"])
    if command == "JOB":
        return _count(f["jobs"]) + b"".join(
            struct.pack(">QI", j["job_id"], j["attempt"]) + _submit_item(j) for j in f["jobs"])
    if command == "CANCEL":
        return _runs(f["runs"]) + _str(f.get("reason", ""))
    if command == "RESULT":
        out = _count(f["items"])
        for i in f["items"]:
            links = i.get("links", ())
            out += (struct.pack(">QIBI", i["job_id"], i["attempt"], i["outcome"], i.get("retry_after_ms", 0))
                    + _str(i.get("error", "")) + _blob(i.get("output", b""))
                    + _count(links) + b"".join(_submit_item(l) for l in links))
        return out
    if command == "RESULT-OK":
        return _count(f["items"]) + b"".join(
            struct.pack(">QIBII", i["job_id"], i["attempt"], i["status"], i.get("accepted", 0), i.get("duplicates", 0))
            for i in f["items"])
    if command == "PROGRESS":
        return struct.pack(">QI", f["job_id"], f["attempt"]) + _str(f.get("text", ""))
    if command == "ROBOTS":
        return (_str(f["origin"]) + struct.pack(">II", f["ttl_ms"], f.get("crawl_delay_ms", 0))
                + _blob(f.get("content", b"")))
    if command in JSON_COMMANDS:
        return json.dumps(f["body"], separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    raise Malformed(CODE_UNKNOWN_COMMAND, "command %r is not a DRV/2 command" % command)


def encode(command, req=0, fields=None):
    """Returns the frames of a message, validated as :func:`decode` would."""
    if command not in COMMANDS:
        raise Malformed(CODE_UNKNOWN_COMMAND, "command %r is not a DRV/2 command" % command)
    frames = [PROTOCOL, command.encode("ascii"), struct.pack(">Q", req)]
    if COMMANDS[command][0]:
        try:
            frames.append(_body(command, fields))
        except struct.error as e:
            raise Malformed(CODE_MALFORMED, "%s: %s" % (command, e), req)
    decode(frames)
    return frames


# --- decoding -------------------------------------------------------------

_LINE, _TEXT, _TOKEN = 0, 1, 2
_TOKEN_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-")


class _Reader:
    def __init__(self, b, command, req):
        self.b, self.off, self.command, self.req = b, 0, command, req
        self.item = None

    def fail(self, code, field, message):
        where = self.command + ("" if self.item is None else " item %d" % self.item)
        raise Malformed(code, "%s %s: %s" % (where, field, message), self.req)

    def left(self):
        return len(self.b) - self.off

    def take(self, n, field):
        if n > self.left():
            self.fail(CODE_MALFORMED, field, "truncated: need %d bytes at offset %d, %d left" % (n, self.off, self.left()))
        v = self.b[self.off:self.off + n]
        self.off += n
        return v

    def u8(self, field):
        return self.take(1, field)[0]

    def u16(self, field):
        return struct.unpack(">H", self.take(2, field))[0]

    def u32(self, field):
        return struct.unpack(">I", self.take(4, field))[0]

    def u64(self, field):
        return struct.unpack(">Q", self.take(8, field))[0]

    def job_id(self, field):
        v = self.u64(field)
        if v == 0:
            self.fail(CODE_MALFORMED, field, "0, want a job id of at least 1")
        return v

    def enum(self, field, names):
        v = self.u8(field)
        if v not in names:
            self.fail(CODE_MALFORMED, field, "value %d, want one of %s" % (v, sorted(names)))
        return v

    def str(self, field, kind, lo, hi):
        n = self.u16(field)
        if n > hi:
            self.fail(CODE_TOO_LARGE, field, "%d bytes, want at most %d" % (n, hi))
        if n < lo:
            self.fail(CODE_MALFORMED, field, "%d bytes, want at least %d" % (n, lo))
        raw = bytes(self.take(n, field))
        if kind == _TOKEN:
            if any(c not in _TOKEN_BYTES for c in raw):
                self.fail(CODE_MALFORMED, field, "want letters, digits and . _ : -")
            return raw.decode("ascii")
        try:
            s = raw.decode("utf-8")
        except UnicodeDecodeError:
            self.fail(CODE_MALFORMED, field, "invalid UTF-8")
        if kind == _LINE and any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in s):
            self.fail(CODE_MALFORMED, field, "control character, want printable text")
        return s

    def blob(self, field, hi):
        n = self.u32(field)
        if n > hi:
            self.fail(CODE_TOO_LARGE, field, "%d bytes, want at most %d" % (n, hi))
        return bytes(self.take(n, field))

    def count(self, field, lo, hi, min_size):
        n = self.u32(field)
        if n > hi:
            self.fail(CODE_TOO_LARGE, field, "%d, want at most %d" % (n, hi))
        if n < lo:
            self.fail(CODE_MALFORMED, field, "%d, want at least %d" % (n, lo))
        if n * min_size > self.left():
            self.fail(CODE_MALFORMED, field, "%d records need at least %d bytes, %d left" % (n, n * min_size, self.left()))
        return n

    def fingerprint(self, field):
        return bytes(self.take(16, field))

    def key(self):
        return Key(self.str("crawler", _LINE, 0, MAX_NAME), self.str("processor", _LINE, 0, MAX_NAME),
                   self.str("url", _LINE, 1, MAX_URL))

    def headers(self):
        n = self.u16("header count")
        if n > MAX_HEADERS:
            self.fail(CODE_TOO_LARGE, "header count", "%d, want at most %d" % (n, MAX_HEADERS))
        if n * 5 > self.left():
            self.fail(CODE_MALFORMED, "header count", "%d headers need at least %d bytes" % (n, n * 5))
        out, seen = [], set()
        for _ in range(n):
            name = self.str("header name", _TOKEN, 1, MAX_HEADER_NAME)
            value = self.str("header value", _LINE, 0, MAX_HEADER_VALUE)
            if name in seen:
                self.fail(CODE_MALFORMED, "header name", "%r appears twice, want unique names" % name)
            seen.add(name)
            out.append((name, value))
        return out

    def attempt(self, field):
        v = self.u32(field)
        if v == 0:
            self.fail(CODE_MALFORMED, field, "0, want an attempt of at least 1")
        return v

    def runs(self, count_field, field, hi):
        n = self.count(count_field, 0, hi, 12)
        return [{"job_id": self.job_id(field), "attempt": self.attempt(field + " attempt")} for _ in range(n)]

    def submit_item(self):
        return {"key": self.key(), "headers": self.headers(), "payload": self.blob("payload", MAX_PAYLOAD)}

    def records(self, field, lo, hi, min_size, one):
        n = self.count(field, lo, hi, min_size)
        out = []
        for i in range(n):
            self.item = i
            out.append(one())
        self.item = None
        return out

    def end(self):
        if self.off != len(self.b):
            self.item = None
            self.fail(CODE_MALFORMED, "body", "%d trailing bytes after the last field" % (len(self.b) - self.off))


_MIN_KEY = 7
_MIN_SUBMIT = _MIN_KEY + 2 + 4


def _hello(r):
    f = {"role": r.enum("role", ROLES)}
    flags = r.u8("flags")
    if flags & ~1:
        r.fail(CODE_MALFORMED, "flags", "0x%02x, want only bit 0 (read-only)" % flags)
    f["read_only"] = bool(flags & 1)
    f["id"] = r.str("id", _LINE, 1, MAX_ID)
    f["host"] = r.str("host", _LINE, 0, MAX_HOST)
    f["slots"] = r.u32("slots")
    f["heartbeat_ms"] = r.u32("heartbeat")
    f["headers"] = r.headers()
    f["held"] = r.runs("held count", "held", MAX_SLOTS)
    r.end()
    role = f["role"]
    if role == WORKER and not 1 <= f["slots"] <= MAX_SLOTS:
        r.fail(CODE_MALFORMED, "slots", "%d, want 1 to %d for a worker" % (f["slots"], MAX_SLOTS))
    if role != WORKER and f["slots"]:
        r.fail(CODE_MALFORMED, "slots", "%d, want 0 for a %s" % (f["slots"], ROLES[role]))
    if role != WORKER and f["headers"]:
        r.fail(CODE_MALFORMED, "header count", "want 0 for a %s" % ROLES[role])
    if role != WORKER and f["held"]:
        r.fail(CODE_MALFORMED, "held count", "want 0 for a %s" % ROLES[role])
    if role != CONSOLE and f["read_only"]:
        r.fail(CODE_MALFORMED, "flags", "read-only set, want it only for a console")
    return f


def _limit(r, field, hi):
    v = r.u32(field)
    if not 1 <= v <= hi:
        r.fail(CODE_MALFORMED, field, "%d, want 1 to %d" % (v, hi))
    return v


def _welcome(r):
    f = {"session": r.u64("session")}
    if f["session"] == 0:
        r.fail(CODE_MALFORMED, "session", "0, want at least 1")
    f["heartbeat_ms"] = r.u32("heartbeat")
    if f["heartbeat_ms"] == 0:
        r.fail(CODE_MALFORMED, "heartbeat", "0 ms, want at least 1")
    f["liveness"] = r.u16("liveness")
    if f["liveness"] == 0:
        r.fail(CODE_MALFORMED, "liveness", "0, want at least 1")
    f["slots"] = r.u32("slots")
    if f["slots"] > MAX_SLOTS:
        r.fail(CODE_MALFORMED, "slots", "%d, want at most %d" % (f["slots"], MAX_SLOTS))
    f["limits"] = {"max_body": _limit(r, "max body", MAX_BODY), "max_batch": _limit(r, "max batch", MAX_BATCH),
                   "max_payload": _limit(r, "max payload", MAX_PAYLOAD)}
    f["server"] = r.str("server", _LINE, 0, MAX_HOST)
    f["cancel"] = r.runs("cancel count", "cancel", MAX_SLOTS)
    r.end()
    return f


def _coded(lo, text_field):
    def dec(r):
        code = r.u16("code")
        if not lo <= code <= 599:
            r.fail(CODE_MALFORMED, "code", "%d, want %d to 599" % (code, lo))
        f = {"code": code, text_field: r.str(text_field, _TEXT, 0, MAX_TEXT)}
        r.end()
        return f
    return dec


def _keys(r):
    f = {"keys": r.records("count", 1, MAX_BATCH, _MIN_KEY, r.key)}
    r.end()
    return f


def _done(r):
    f = {"items": r.records("count", 1, MAX_BATCH, _MIN_KEY + 1,
                            lambda: {"key": r.key(), "outcome": r.enum("outcome", DONE_OUTCOMES)})}
    r.end()
    return f


def _verdicts(wait_allowed):
    def one(r):
        fp = r.fingerprint("fingerprint")
        v = r.enum("verdict", VERDICTS)
        if v == WAIT and not wait_allowed:
            r.fail(CODE_MALFORMED, "verdict", "wait, want ok, no or error in an ANSWER")
        return {"fingerprint": fp, "verdict": v, "reason": r.str("reason", _LINE, 0, MAX_REASON)}

    def dec(r):
        f = {"items": r.records("count", 1, MAX_BATCH, 16 + 1 + 2, lambda: one(r))}
        r.end()
        return f
    return dec


def _submit(r):
    f = {"jobs": r.records("count", 1, MAX_BATCH, _MIN_SUBMIT, r.submit_item)}
    r.end()
    return f


def _submitted(r):
    def one():
        status = r.enum("status", SUBMIT_STATUSES)
        job_id = r.u64("job id")
        if status == S_ACCEPTED and job_id == 0:
            r.fail(CODE_MALFORMED, "job id", "0, want the new job's id for accepted")
        if status in (S_ERROR, S_WAIT) and job_id != 0:
            r.fail(CODE_MALFORMED, "job id", "%d, want 0 for %s" % (job_id, SUBMIT_STATUSES[status]))
        return {"status": status, "job_id": job_id, "fingerprint": r.fingerprint("fingerprint"),
                "reason": r.str("reason", _LINE, 0, MAX_REASON)}
    f = {"items": r.records("count", 1, MAX_BATCH, 1 + 8 + 16 + 2, one)}
    r.end()
    return f


def _job(r):
    def one():
        job_id = r.job_id("job id")
        it = {"job_id": job_id, "attempt": r.attempt("attempt")}
        it.update(r.submit_item())
        return it
    f = {"jobs": r.records("count", 1, MAX_BATCH, 8 + 4 + _MIN_SUBMIT, one)}
    r.end()
    return f


def _cancel(r):
    runs = r.runs("count", "job id", MAX_SLOTS)
    if not runs:
        r.fail(CODE_MALFORMED, "count", "0, want at least 1")
    f = {"runs": runs, "reason": r.str("reason", _TEXT, 0, MAX_TEXT)}
    r.end()
    return f


def _result(r):
    total = [0]

    def one():
        it = {"job_id": r.job_id("job id"), "attempt": r.attempt("attempt"), "outcome": r.enum("outcome", OUTCOMES),
              "retry_after_ms": r.u32("retry after")}
        if it["retry_after_ms"] and it["outcome"] != R_THROTTLED:
            r.fail(CODE_MALFORMED, "retry after", "want 0 unless throttled")
        it["error"] = r.str("error", _TEXT, 0, MAX_TEXT)
        it["output"] = r.blob("output", MAX_OUTPUT)
        k = r.count("link count", 0, MAX_LINKS_PER_RESULT, _MIN_SUBMIT)
        if k and it["outcome"] != R_OK:
            r.fail(CODE_MALFORMED, "link count", "%d links for outcome %s, want links only with ok"
                   % (k, OUTCOMES[it["outcome"]]))
        total[0] += k
        if total[0] > MAX_LINKS:
            r.fail(CODE_TOO_LARGE, "link count", "%d links in the message, want at most %d" % (total[0], MAX_LINKS))
        it["links"] = [r.submit_item() for _ in range(k)]
        return it
    f = {"items": r.records("count", 1, MAX_BATCH, 8 + 4 + 1 + 4 + 2 + 4 + 4, one)}
    r.end()
    return f


def _result_ok(r):
    def one():
        it = {"job_id": r.job_id("job id"), "attempt": r.attempt("attempt"), "status": r.enum("status", RESULT_STATUSES),
              "accepted": r.u32("accepted"), "duplicates": r.u32("duplicates")}
        if it["status"] != RECORDED and (it["accepted"] or it["duplicates"]):
            r.fail(CODE_MALFORMED, "accepted", "want 0 unless recorded")
        return it
    f = {"items": r.records("count", 1, MAX_BATCH, 8 + 4 + 1 + 4 + 4, one)}
    r.end()
    return f


def _progress(r):
    f = {"job_id": r.job_id("job id"), "attempt": r.attempt("attempt"), "text": r.str("text", _TEXT, 0, MAX_TEXT)}
    r.end()
    return f


def _robots(r):
    f = {"origin": r.str("origin", _LINE, 1, MAX_URL), "ttl_ms": r.u32("ttl")}
    if f["ttl_ms"] == 0:
        r.fail(CODE_MALFORMED, "ttl", "0, want at least 1 ms")
    f["crawl_delay_ms"] = r.u32("crawl delay")
    f["content"] = r.blob("content", MAX_ROBOTS)
    r.end()
    return f


def _json_body(r):
    try:
        text = r.b.decode("utf-8")
    except UnicodeDecodeError:
        r.fail(CODE_MALFORMED, "body", "invalid UTF-8, want a JSON document")
    try:
        return json.loads(text)
    except ValueError as e:
        r.fail(CODE_MALFORMED, "body", "bad JSON: %s" % e)


def _line_ok(s):
    return not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in s)


def _query(r):
    q = _json_body(r)
    if not isinstance(q, dict):
        r.fail(CODE_MALFORMED, "body", "want a JSON object")
    view, off, lim = q.get("view", ""), q.get("offset", 0), q.get("limit", 0)
    sort, flt, key = q.get("sort", ""), q.get("filter", ""), q.get("key", "")
    if view not in VIEWS:
        r.fail(CODE_MALFORMED, "view", "%r, want one of %s" % (view, ", ".join(VIEWS)))
    if not isinstance(off, int) or off < 0:
        r.fail(CODE_MALFORMED, "offset", "%r, want at least 0" % (off,))
    if not isinstance(lim, int) or not 0 <= lim <= MAX_BATCH:
        r.fail(CODE_MALFORMED, "limit", "%r, want 0 to %d" % (lim, MAX_BATCH))
    if len(sort.encode()) > MAX_HEADER_NAME or any(c not in _TOKEN_BYTES for c in sort.encode()):
        r.fail(CODE_MALFORMED, "sort", "%r, want a column name" % sort)
    if len(flt.encode()) > MAX_FILTER:
        r.fail(CODE_TOO_LARGE, "filter", "%d bytes, want at most %d" % (len(flt.encode()), MAX_FILTER))
    if not _line_ok(flt):
        r.fail(CODE_MALFORMED, "filter", "control character")
    bad = _filter_error(flt)
    if bad:
        r.fail(CODE_MALFORMED, "filter", bad)
    if key and not _is_fingerprint(key) and not (view == "jobs" and _is_job_id(key)):
        r.fail(CODE_MALFORMED, "key", "%r, want 32 hex digits%s" % (key, " or a decimal job id" if view == "jobs" else ""))
    return {"body": q}


FILTER_FIELDS = ("state", "host", "worker", "crawler", "processor", "kind", "key")


def _filter_error(flt):
    """What is wrong with a filter text (section 13's grammar), or None."""
    for term in flt.split():
        if "=" not in term:
            continue  # free text
        field, values = term.split("=", 1)
        if not field:
            return "term %r: no field before '='" % term
        if field.lower() not in FILTER_FIELDS:
            return "term %r: unknown field %r, want one of %s" % (term, field, ", ".join(FILTER_FIELDS))
        if not any(v.strip() for v in values.split(",")):
            return "term %r: no value after '='" % term
    return None


def _is_fingerprint(key):
    try:
        return len(key) == 32 and len(bytes.fromhex(key)) == 16
    except ValueError:
        return False


def _is_job_id(key):
    return key.isascii() and key.isdigit() and 1 <= int(key) < 1 << 64


def _action(r):
    a = _json_body(r)
    if not isinstance(a, dict):
        r.fail(CODE_MALFORMED, "body", "want a JSON object")
    kind, targets, crawler = a.get("kind", ""), a.get("targets") or [], a.get("crawler", "")
    if kind in ACTIONS_WITH_TARGETS:
        if not targets:
            r.fail(CODE_MALFORMED, "targets", "none, want at least one for %s" % kind)
    elif kind in ACTIONS_WITHOUT:
        if kind == "cancel" and not crawler:
            r.fail(CODE_MALFORMED, "crawler", "empty, want the crawl to cancel")
        if kind == "define-crawl":
            c = a.get("crawl")
            if not isinstance(c, dict):
                r.fail(CODE_MALFORMED, "crawl", "missing, want the crawl's definition for define-crawl")
            name = c.get("name", "")
            if not isinstance(name, str) or not 1 <= len(name.encode()) <= MAX_NAME or not _line_ok(name):
                r.fail(CODE_MALFORMED, "crawl.name", "%r, want 1 to %d bytes of text" % (name, MAX_NAME))
        if targets:
            r.fail(CODE_MALFORMED, "targets", "%d, want none for %s" % (len(targets), kind))
    else:
        r.fail(CODE_MALFORMED, "kind", "%r, want evict, drain, undrain, requeue, requeue-failed, pause, resume, cancel or define-crawl" % kind)
    if crawler and kind not in ACTIONS_WITH_CRAWLER:
        r.fail(CODE_MALFORMED, "crawler", "given for %s, want it only with %s" % (kind, ", ".join(ACTIONS_WITH_CRAWLER)))
    if not isinstance(crawler, str) or len(crawler.encode()) > MAX_NAME or not _line_ok(crawler):
        r.fail(CODE_MALFORMED, "crawler", "%r, want at most %d bytes of text" % (crawler, MAX_NAME))
    if len(targets) > MAX_BATCH:
        r.fail(CODE_TOO_LARGE, "targets", "%d, want at most %d" % (len(targets), MAX_BATCH))
    for i, t in enumerate(targets):
        r.item = i
        if not 1 <= len(t.encode()) <= MAX_TARGET:
            r.fail(CODE_MALFORMED, "target", "%d bytes, want 1 to %d" % (len(t.encode()), MAX_TARGET))
        if not _line_ok(t):
            r.fail(CODE_MALFORMED, "target", "control character")
    return {"body": a}


_DECODERS = {
    "HELLO": _hello, "WELCOME": _welcome, "DISCONNECT": _coded(200, "reason"), "ERROR": _coded(400, "message"),
    "REQUEST": _keys, "QUEUE": _keys, "DONE": _done, "VERDICTS": _verdicts(True), "ANSWER": _verdicts(False),
    "SUBMIT": _submit, "SUBMITTED": _submitted, "JOB": _job, "CANCEL": _cancel, "RESULT": _result,
    "RESULT-OK": _result_ok, "PROGRESS": _progress, "QUERY": _query, "ACTION": _action, "ROBOTS": _robots,
    "PAGE": lambda r: {"body": _json_body(r)}, "TOTALS": lambda r: {"body": _json_body(r)},
    "ACTED": lambda r: {"body": _json_body(r)},
}


def decode(frames):
    """Returns ``(command, req, fields)``; raises :class:`Malformed` with the code of section 7."""
    frames = [bytes(f) for f in frames]
    req = struct.unpack(">Q", frames[2])[0] if len(frames) >= 3 and len(frames[2]) == 8 else 0
    if not frames:
        raise Malformed(CODE_MALFORMED, "empty message, want at least 3 frames")
    p = frames[0]
    if p != PROTOCOL:
        if len(p) == 4 and p[:3] == b"DRV" and 0x30 <= p[3] <= 0x39:
            raise Malformed(CODE_VERSION, "protocol %r is not supported, this peer speaks DRV2" % p, req)
        raise Malformed(CODE_MALFORMED, "protocol frame %r, want DRV2" % p[:32], req)
    if len(frames) > 4:
        raise Malformed(CODE_MALFORMED, "%d frames, want at most 4" % len(frames), req)
    if len(frames) < 3:
        raise Malformed(CODE_MALFORMED, "%d frames, want protocol, command and request id" % len(frames))
    try:
        command = frames[1].decode("ascii")
    except UnicodeDecodeError:
        command = None
    if command not in COMMANDS:
        raise Malformed(CODE_UNKNOWN_COMMAND, "command %r is not a DRV/2 command" % frames[1][:32], req)
    if len(frames[2]) != 8:
        raise Malformed(CODE_MALFORMED, "%s request id: %d bytes, want 8" % (command, len(frames[2])))
    has_body = COMMANDS[command][0]
    if len(frames) != (4 if has_body else 3):
        raise Malformed(CODE_MALFORMED, "%s: %d frames, want %d" % (command, len(frames), 4 if has_body else 3), req)
    if not has_body:
        return command, req, {}
    body = frames[3]
    if len(body) > MAX_BODY:
        raise Malformed(CODE_TOO_LARGE, "%s body: %d bytes, want at most %d" % (command, len(body), MAX_BODY), req)
    r = _Reader(body, command, req)
    return command, req, _DECODERS[command](r)


_TOPIC_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789._-")


def decode_event(frames):
    """Decodes a message of the events socket (section 14): two frames, the topic (the event's
    kind, 1 to 64 bytes of ``a-z 0-9 . _ -``) and the event as UTF-8 JSON whose ``kind`` equals the
    topic. Returns the event (a dict); raises :class:`Malformed` with code 400 (413 for a body over
    16 MiB)."""
    frames = [bytes(f) for f in frames]
    if len(frames) != 2:
        raise Malformed(CODE_MALFORMED, "event: %d frames, want 2 (topic, JSON)" % len(frames))
    topic, body = frames
    if not 1 <= len(topic) <= MAX_TOPIC:
        raise Malformed(CODE_MALFORMED, "event topic: %d bytes, want 1 to %d" % (len(topic), MAX_TOPIC))
    if not set(topic) <= _TOPIC_BYTES:
        raise Malformed(CODE_MALFORMED, "event topic %r: want lower-case letters, digits and . _ -" % topic[:32])
    if len(body) > MAX_BODY:
        raise Malformed(CODE_TOO_LARGE, "event body: %d bytes, want at most %d" % (len(body), MAX_BODY))
    try:
        ev = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise Malformed(CODE_MALFORMED, "event body: %s, want UTF-8 JSON" % e)
    if not isinstance(ev, dict) or ev.get("kind") != topic.decode("ascii"):
        raise Malformed(CODE_MALFORMED, "event kind %r under topic %r, want them equal"
                        % (ev.get("kind") if isinstance(ev, dict) else ev, topic))
    return ev


def reason_token(reason):
    """The token of a verdict or submit reason: the part before the first ':' (section 6.8)."""
    return reason.split(":", 1)[0]


def decode_reply(frames):
    """:func:`decode` for what a client receives: an ERROR in another DRV version's frame 0 (a
    server refusing a message of that version answers in it, section 12) is read too, since
    ERROR's body is the same in every version."""
    frames = [bytes(f) for f in frames]
    if (len(frames) == 4 and frames[0] != PROTOCOL and len(frames[0]) == 4 and frames[0][:3] == b"DRV"
            and frames[1] == b"ERROR"):
        return decode([PROTOCOL] + frames[1:])
    return decode(frames)
