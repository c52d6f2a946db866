"""Runs every vector of the conformance kit (conformance/) through the
Python client's codec and URL normalisation."""

import json
import os
import re
import unittest

from drover import drv, url

KIT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "conformance")


def load(name):
    with open(os.path.join(KIT, name), encoding="utf-8") as f:
        return json.load(f)


def plain(x):
    """The kit's neutral form of a decoded value: bytes as hex, keys as objects."""
    if isinstance(x, drv.Key):
        return {"crawler": x.crawler, "processor": x.processor, "url": x.url}
    if isinstance(x, (bytes, bytearray)):
        return x.hex()
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    return x


BYTES_FIELDS = {"payload", "output", "fingerprint", "content"}


def native(x, name=None):
    """The kit's neutral form turned back into the codec's: hex to bytes."""
    if name in BYTES_FIELDS and isinstance(x, str):
        return bytes.fromhex(x)
    if name == "key" and isinstance(x, dict):
        return drv.Key(x["crawler"], x["processor"], x["url"])
    if name == "keys":
        return [drv.Key(k["crawler"], k["processor"], k["url"]) for k in x]
    if name == "body":
        return x
    if isinstance(x, dict):
        return {k: native(v, k) for k, v in x.items()}
    if isinstance(x, list):
        return [native(v) for v in x]
    return x


class Frames(unittest.TestCase):
    def test_every_command_is_covered(self):
        seen = {v["command"] for v in load("frames.json")["vectors"]}
        self.assertEqual(seen, set(drv.COMMANDS))

    def test_decode(self):
        for v in load("frames.json")["vectors"]:
            with self.subTest(v["name"]):
                command, req, fields = drv.decode([bytes.fromhex(f) for f in v["frames"]])
                self.assertEqual((command, req), (v["command"], v["req"]))
                self.assertEqual(plain(fields), v["fields"])

    def test_encode(self):
        for v in load("frames.json")["vectors"]:
            with self.subTest(v["name"]):
                frames = drv.encode(v["command"], v["req"], native(v["fields"]))
                want = [bytes.fromhex(f) for f in v["frames"]]
                if v["command"] in drv.JSON_COMMANDS:
                    # JSON member order and spacing may differ: compare values.
                    self.assertEqual(frames[:3], want[:3])
                    self.assertEqual(json.loads(frames[3]), json.loads(want[3]))
                else:
                    self.assertEqual(frames, want)


def error_frames(v):
    """An error vector's frames, with its ``fill`` (zero bytes up to a size) applied."""
    frames = [bytes.fromhex(f) for f in v["frames"]]
    fill = v.get("fill")
    if fill:
        f = frames[fill["frame"]]
        frames[fill["frame"]] = f + bytes(fill["size"] - len(f))
    return frames


class Errors(unittest.TestCase):
    def test_refused_with_code(self):
        for v in load("errors.json")["vectors"]:
            with self.subTest(v["name"]):
                with self.assertRaises(drv.Malformed) as cm:
                    drv.decode(error_frames(v))
                self.assertEqual(cm.exception.code, v["code"], str(cm.exception))
                self.assertEqual(cm.exception.req, v["req"], str(cm.exception))

    def test_encoder_refuses_too(self):
        with self.assertRaises(drv.Malformed) as cm:
            drv.encode("REQUEST", 1, {"keys": [drv.Key("news", "html", "")]})
        self.assertEqual(cm.exception.code, drv.CODE_MALFORMED)
        with self.assertRaises(drv.Malformed) as cm:
            drv.encode("SUBMIT", 1, {"jobs": [{"key": drv.Key("n", "h", "https://a/"), "payload": b"x" * (drv.MAX_PAYLOAD + 1)}]})
        self.assertEqual(cm.exception.code, drv.CODE_TOO_LARGE)


class Events(unittest.TestCase):
    def test_events(self):
        kit = load("events.json")
        self.assertEqual(kit["max_topic"], drv.MAX_TOPIC)
        for v in kit["vectors"]:
            with self.subTest(v["name"]):
                frames = [bytes.fromhex(f) for f in v["frames"]]
                if "code" in v:
                    with self.assertRaises(drv.Malformed) as cm:
                        drv.decode_event(frames)
                    self.assertEqual(cm.exception.code, v["code"], str(cm.exception))
                else:
                    self.assertEqual(drv.decode_event(frames), v["event"])


class Limits(unittest.TestCase):
    """Every limit of PROTOCOL.md section 8 is exercised by error vectors the codec refuses
    (Errors above runs them all), but for a named list of gaps."""

    VECTORS = {
        "frames per message": ["two-frames", "five-frames"],
        "records per batch (keys, verdicts, jobs, results, acknowledgements)": ["count-over-limit", "count-zero", "count-lying", "welcome-max-batch-10001"],
        "links per result / per RESULT message": ["links-over-limit"],
        "runs in `held`, `cancel`, CANCEL; worker slots": ["held-over-limit", "cancel-count-zero", "hello-worker-4097-slots"],
        "crawler, processor": ["crawler-too-long"],
        "url": ["url-empty", "url-too-long"],
        "headers per list": ["header-count-over-limit"],
        "header name / value": ["header-name-empty", "header-name-too-long", "header-value-too-long"],
        "payload / output": ["payload-too-large", "output-too-large"],
        "ROBOTS content": ["robots-content-too-large"],
        "peer id / host / server name": ["id-empty", "id-too-long"],
        "verdict and submit reasons": ["reason-too-long"],
        "texts (error, reason, message, progress)": ["text-too-long"],
        "admin query limit (rows)": ["query-limit-over"],
        "admin filter / action target": ["query-filter-too-long", "action-target-too-long"],
        "body frame": ["body-over-limit"],
        "command name": ["command-name-11-bytes", "command-name-2-bytes"],
        "whole message": ["body-over-limit", "command-name-11-bytes"],
    }
    # Limits no decoder answers: libzmq drops a connection whose inbound frame is over
    # MAXMSGSIZE before DRV/2 sees it. A live test drives each against a real serve.
    LIVE = {"inbound frame before libzmq drops the connection (`MAXMSGSIZE`)": "test_oversized_frame_drops_the_connection"}
    # Event topics are checked by events.json (Events above), not errors.json.
    EVENTS = {"event topic": ["topic-empty", "topic-65-bytes", "topic-64-bytes-unknown-kind"]}

    def test_every_limit_has_vectors(self):
        with open(os.path.join(KIT, "..", "docs", "PROTOCOL.md"), encoding="utf-8") as f:
            doc = f.read()
        table = doc.split("## 8. Limits", 1)[1].split("| limit | value |", 1)[1].split("\n\n", 1)[0]
        rows = set(re.findall(r"^\| (.+?) \| .+ \|$", table, re.M)) - {"---"}
        self.assertGreater(len(rows), 15)
        named = set(self.VECTORS) | set(self.LIVE) | set(self.EVENTS)
        self.assertEqual(rows - named, set(), "limits of section 8 with no vector and no live test")
        self.assertEqual(named - rows, set(), "limits named here that section 8 does not have")
        names = {v["name"] for v in load("errors.json")["vectors"]}
        for row, vs in self.VECTORS.items():
            self.assertLessEqual(set(vs), names, "vectors for %r missing from errors.json" % row)
        events = {v["name"] for v in load("events.json")["vectors"]}
        for row, vs in self.EVENTS.items():
            self.assertLessEqual(set(vs), events, "vectors for %r missing from events.json" % row)
        with open(os.path.join(os.path.dirname(__file__), "test_server.py"), encoding="utf-8") as f:
            live = f.read()  # read, not imported: this suite needs no pyzmq
        for row, test in self.LIVE.items():
            self.assertIn("    def %s(self):" % test, live, "no live test for %r" % row)


class URLs(unittest.TestCase):
    def test_normal_forms_and_fingerprints(self):
        kit = load("url.json")
        for v in kit["vectors"]:
            with self.subTest(v["input"]):
                if "reason" in v:
                    with self.assertRaises(url.URLRefused) as cm:
                        url.normalize(v["input"])
                    self.assertEqual(cm.exception.reason, v["reason"])
                    continue
                n, fp = url.key_fingerprint(kit["crawler"], kit["processor"], v["input"])
                self.assertEqual(n, v["normalized"])
                self.assertEqual(fp.hex(), v["fingerprint"])


def validate(schema_name, value, path="$"):
    """A JSON Schema check of the subset the kit's schemas use."""
    with open(os.path.join(KIT, "schema", schema_name), encoding="utf-8") as f:
        schema = json.load(f)
    _check(schema, value, path)


def _check(s, v, path):
    if "$ref" in s:
        validate(s["$ref"], v, path)
        return
    t = s.get("type")
    types = {"object": dict, "array": list, "string": str, "boolean": bool}
    if t == "integer":
        assert isinstance(v, int) and not isinstance(v, bool), "%s: %r is not an integer" % (path, v)
        assert v >= s.get("minimum", v), "%s: %r below the minimum" % (path, v)
    elif t == "number":
        assert isinstance(v, (int, float)) and not isinstance(v, bool), "%s: %r is not a number" % (path, v)
        assert v >= s.get("minimum", v), "%s: %r below the minimum" % (path, v)
    elif t:
        assert isinstance(v, types[t]), "%s: %r is not a %s" % (path, v, t)
    if "enum" in s:
        assert v in s["enum"], "%s: %r not in %s" % (path, v, s["enum"])
    if s.get("format") == "date-time":
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$", v), "%s: %r is no RFC 3339 time" % (path, v)
    if t == "object":
        for r in s.get("required", ()):
            assert r in v, "%s: member %s missing" % (path, r)
        props = s.get("properties", {})
        for k, x in v.items():
            if k in props:
                _check(props[k], x, path + "." + k)
            elif isinstance(s.get("additionalProperties"), dict):
                _check(s["additionalProperties"], x, path + "." + k)
    if t == "array":
        for i, x in enumerate(v):
            _check(s["items"], x, "%s[%d]" % (path, i))


class Admin(unittest.TestCase):
    def test_bodies_satisfy_their_schemas(self):
        vectors = load("admin.json")["vectors"]
        self.assertGreater(len(vectors), 10)
        for v in vectors:
            with self.subTest(v["name"]):
                validate(v["schema"] + ".json", v["body"])

    def test_client_knows_every_view_and_action(self):
        """The codec's lists of views and action kinds are the schemas' (generated from the server's)."""
        with open(os.path.join(KIT, "schema", "Action.json"), encoding="utf-8") as f:
            kinds = json.load(f)["properties"]["kind"]["enum"]
        with open(os.path.join(KIT, "schema", "Query.json"), encoding="utf-8") as f:
            views = json.load(f)["properties"]["view"]["enum"]
        self.assertEqual(set(drv.ACTIONS_WITH_TARGETS + drv.ACTIONS_WITHOUT), set(kinds))
        self.assertEqual(set(drv.VIEWS), set(views))

    def test_client_knows_every_wait(self):
        """The codec's wait words are the JobRow schema's, in the document's order."""
        with open(os.path.join(KIT, "schema", "JobRow.json"), encoding="utf-8") as f:
            waits = json.load(f)["properties"]["wait"]["enum"]
        self.assertEqual(list(drv.WAITS), waits)

    def test_schemas_catch_a_bad_body(self):
        with self.assertRaises(AssertionError):
            validate("Query.json", {"view": "cats"})
        with self.assertRaises(AssertionError):
            validate("Totals.json", {"queued": "three"})


if __name__ == "__main__":
    unittest.main()
