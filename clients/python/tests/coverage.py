"""What the live suite exercised, against every name docs/PROTOCOL.md gives.

Importing this module wraps the client codec's ``drv.encode`` and
``drv.decode_reply`` so that every message the suite's clients send or
receive is recorded: its command, ERROR and DISCONNECT codes, close reasons,
verdicts, reason tokens, statuses and outcomes. The events sockets record the
kinds they see with :func:`event`. :func:`missing` lists, per category, the
names the document defines that nothing exercised; test_server.py's last
test fails when that list is not exactly the known gaps. That test judges
the whole suite (SUITE), so it runs after it: run alone, or with part of
the suite, it skips, naming the tests that did not run (:func:`not_run`).
"""

import importlib
import os
import re
import unittest

from drover import drv

SEEN = {k: set() for k in ("command", "code", "close-reason", "reason", "verdict", "submit-status",
                           "outcome", "result-status", "done-outcome", "event")}


def _item_reasons(items):
    for it in items:
        if "reason" in it:
            SEEN["reason"].add(drv.reason_token(it["reason"]))


def record(command, fields):
    """Notes one message, sent or received."""
    SEEN["command"].add(command)
    fields = fields or {}
    items = fields.get("items") or []
    if command == "ERROR":
        SEEN["code"].add(fields["code"])
    elif command == "DISCONNECT":
        SEEN["code"].add(fields["code"])
        SEEN["close-reason"].add(fields["reason"])
    elif command in ("VERDICTS", "ANSWER"):
        SEEN["verdict"].update(drv.VERDICTS[it["verdict"]] for it in items)
        _item_reasons(items)
    elif command == "SUBMITTED":
        SEEN["submit-status"].update(drv.SUBMIT_STATUSES[it["status"]] for it in items)
        _item_reasons(items)
    elif command == "RESULT":
        SEEN["outcome"].update(drv.OUTCOMES[it["outcome"]] for it in items)
    elif command == "RESULT-OK":
        SEEN["result-status"].update(drv.RESULT_STATUSES[it["status"]] for it in items)
    elif command == "DONE":
        SEEN["done-outcome"].update(drv.DONE_OUTCOMES[it["outcome"]] for it in items)


def event(kind):
    """Notes an event kind seen on an events socket."""
    SEEN["event"].add(kind)


_encode, _decode_reply = drv.encode, drv.decode_reply


def _recording_encode(command, req=0, fields=None):
    frames = _encode(command, req, fields)
    record(command, fields)
    return frames


def _recording_decode_reply(frames):
    command, req, fields = _decode_reply(frames)
    record(command, fields)
    return command, req, fields


drv.encode, drv.decode_reply = _recording_encode, _recording_decode_reply


# --- which of the suite's tests ran -------------------------------------------------

# The modules whose tests the check judges: together they must exercise every name.
SUITE = ("tests.test_reconnect", "tests.test_retry_codes", "tests.test_server")

RAN = set()  # ids of the tests that ran (or were skipped) in this process

_run = unittest.TestCase.run


def _counted_run(self, result=None):
    RAN.add(self.id())
    return _run(self, result)


unittest.TestCase.run = _counted_run


def not_run(but):
    """The ids of SUITE's tests, but those of the class ``but`` (the check itself), that did
    not run before it in this process: the check can judge the suite only after all of them."""
    left = []
    pending = [unittest.TestLoader().loadTestsFromModule(importlib.import_module(m)) for m in SUITE]
    while pending:
        t = pending.pop()
        if isinstance(t, unittest.TestSuite):
            pending.extend(t)
        elif not isinstance(t, but) and t.id() not in RAN:
            left.append(t.id())
    return sorted(left)


# --- the document's names ---------------------------------------------------------

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "PROTOCOL.md")


def _table_after(doc, marker):
    return doc.split(marker, 1)[1].lstrip("\n").split("\n\n", 1)[0]


def _numbered(doc, section, field):
    """The names of a numbered enumeration: the row of `field` in the section's table, '1 ok, 2 no, ...'."""
    part = doc.split(section, 1)[1].split("\n### ", 1)[0]
    row = re.search(r"^\| %s \| `u8` \| (.*)$" % re.escape(field), part, re.M).group(1)
    return set(re.findall(r"\b\d ([a-z]+)", row))


def documented():
    """Every name the document defines, by category."""
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    names = {}
    commands = set()
    for title in re.findall(r"^### 6\.\d+ (.+?)(?: \(|$)", doc, re.M):
        commands.update(re.findall(r"\b[A-Z][A-Z-]{2,}\b", title))
    admin = doc.split("### 6.17 Admin commands", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    commands.update(re.findall(r"\b[A-Z][A-Z-]{2,}\b", admin))
    names["command"] = commands
    names["code"] = {int(c) for c in re.findall(r"^\| (\d{3}) \|", _table_after(doc, "## 7. Error codes"), re.M)}
    names["close-reason"] = set(re.findall(r"^\| `([a-z-]+)` \|", _table_after(doc, "<!-- close-reasons -->"), re.M))
    reasons = set(re.findall(r"^\| `([a-z-]*)`(?: \(empty\))? \|", _table_after(doc, "<!-- reasons -->"), re.M))
    names["reason"] = reasons
    names["verdict"] = _numbered(doc, "### 6.8 VERDICTS", "verdict")
    names["submit-status"] = _numbered(doc, "### 6.11 SUBMITTED", "status")
    names["outcome"] = _numbered(doc, "### 6.14 RESULT", "outcome")
    names["result-status"] = _numbered(doc, "### 6.15 RESULT-OK", "status")
    done = doc.split("### 6.7 DONE", 1)[1].split("\n### ", 1)[0]
    names["done-outcome"] = set(re.findall(r"\b\d ([a-z]+)", re.search(r"outcome \((.*?)\)", done).group(1)))
    names["event"] = set(re.findall(r"^\| `([a-z0-9._-]+)` \|", _table_after(doc, "<!-- event-kinds -->"), re.M))
    return names


def missing():
    """{category: names documented but not exercised}, empty categories left out."""
    out = {}
    for cat, names in documented().items():
        gap = names - SEEN[cat]
        if gap:
            out[cat] = gap
    return out
