"""Two real Scrapy processes crawl one local site together through drover:
every page is fetched once, and both processes fetch."""

import collections
import http.server
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

try:
    import scrapy  # noqa: F401
    import zmq  # noqa: F401
except ImportError:
    raise unittest.SkipTest("Scrapy or pyzmq is not installed (Debian: python3-scrapy, python3-zmq)")

from tests.server import Server

SECTIONS, PAGES = 5, 6  # / -> /s<i>/ -> /s<i>/p<j>: 1 + 5 + 30 pages

SPIDER = '''
import scrapy

class SiteSpider(scrapy.Spider):
    name = "site"
    start_urls = [%(root)r]

    def parse(self, response):
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse)
'''


class Site(http.server.ThreadingHTTPServer):
    """A small site whose pages link to each other (each page also links back up), counting
    every fetch by path and by User-Agent."""

    def __init__(self):
        self.fetches = collections.Counter()
        self.by_agent = collections.Counter()
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), Handler)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with self.server.lock:
            self.server.fetches[self.path] += 1
            self.server.by_agent[self.headers.get("User-Agent", "")] += 1
        if self.path == "/":
            links = ["/s%d/" % i for i in range(SECTIONS)]
        elif self.path.count("/") == 2 and self.path.endswith("/"):
            links = [self.path + "p%d" % j for j in range(PAGES)] + ["/"]
        else:
            links = ["/", self.path.rsplit("/", 1)[0] + "/"]
        # The home page is slow, so that both processes are up when its links are scheduled;
        # the others take a little time each, so that both processes get some.
        time.sleep(3 if self.path == "/" else 0.15)
        body = "<html><body>%s</body></html>" % "".join('<a href="%s">x</a>' % l for l in links)
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


class ScrapyFleet(unittest.TestCase):
    def test_two_spiders_fetch_each_page_once(self):
        site = Site()
        threading.Thread(target=site.serve_forever, daemon=True).start()
        self.addCleanup(site.server_close)
        self.addCleanup(site.shutdown)
        server = Server()
        self.addCleanup(server.stop)
        tmp = tempfile.mkdtemp(prefix="drover-scrapy-")
        root = "http://127.0.0.1:%d/" % site.server_address[1]
        with open(os.path.join(tmp, "spider.py"), "w") as f:
            f.write(SPIDER % {"root": root})
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
        procs = []
        for name in ("spider-a", "spider-b"):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "scrapy", "runspider", os.path.join(tmp, "spider.py"),
                 "-s", "SCHEDULER=drover.scrapy.Scheduler",
                 "-s", "DUPEFILTER_CLASS=drover.scrapy.DupeFilter",
                 "-s", "DROVER_ENDPOINT=" + server.peers,
                 "-s", "DROVER_IDLE_CLOSE=2", "-s", "DROVER_WORKER_ID=" + name,
                 "-s", "USER_AGENT=" + name, "-s", "CONCURRENT_REQUESTS=2",
                 "-s", "ROBOTSTXT_OBEY=False", "-s", "TELNETCONSOLE_ENABLED=False", "-s", "LOG_LEVEL=INFO"],
                cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        outputs = []
        for p in procs:
            try:
                out, _ = p.communicate(timeout=180)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                raise
            outputs.append(out.decode(errors="replace"))
            self.assertEqual(p.returncode, 0, out.decode(errors="replace")[-3000:])
        want = {"/"} | {"/s%d/" % i for i in range(SECTIONS)} | {"/s%d/p%d" % (i, j) for i in range(SECTIONS) for j in range(PAGES)}
        self.assertEqual(set(site.fetches), want, "pages fetched differ from the site's")
        twice = {p: n for p, n in site.fetches.items() if n != 1}
        self.assertEqual(twice, {}, "pages fetched more than once")
        self.assertEqual(sum(site.by_agent.values()), len(want))
        self.assertEqual(set(site.by_agent), {"spider-a", "spider-b"},
                         "both processes should fetch: %s\n%s" % (dict(site.by_agent), outputs[0][-2000:]))


if __name__ == "__main__":
    unittest.main()
