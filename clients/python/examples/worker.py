"""A drover worker in Python: fetches each job's URL and reports the page's
links, so a `drover submit` of one URL crawls a site.

    drover serve &
    python3 examples/worker.py tcp://127.0.0.1:5570 &
    echo https://example.com/ | drover submit --crawler demo --processor html
"""

import re
import sys
import urllib.error
import urllib.request
from urllib.parse import urljoin, urlsplit

sys.path.insert(0, __file__.rsplit("/examples/", 1)[0])  # run from a checkout

from drover import External, Ok, Throttled, Worker  # noqa: E402

endpoint = sys.argv[1] if len(sys.argv) > 1 else "tcp://127.0.0.1:5570"
worker = Worker(endpoint, peer_id="example-fetcher", slots=4)


@worker.handler
def fetch(job):
    try:
        with urllib.request.urlopen(job.url, timeout=30) as r:
            body = r.read()
    except urllib.error.HTTPError as e:
        if e.code in (429, 503):
            retry = e.headers.get("Retry-After", "0")
            raise Throttled(retry_after=float(retry) if retry.isdigit() else 0, error="HTTP %d" % e.code)
        raise External("HTTP %d" % e.code)  # the page's fault: do not retry
    site = urlsplit(job.url).netloc
    links = {urljoin(job.url, h) for h in re.findall(rb'href="([^"#]+)"', body) for h in [h.decode("utf-8", "replace")]}
    same_site = [l for l in links if urlsplit(l).netloc == site and l.startswith("http")]
    return Ok(output=body[:200], links=same_site)   # links become jobs of the same crawler and processor


if __name__ == "__main__":
    worker.run()
