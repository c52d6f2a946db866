"""Submits URLs to a drover coordinator and prints each one's fate; then shows
the ledger: a crawler that does its own fetching asks for a key first.

    python3 examples/producer.py tcp://127.0.0.1:5570 https://example.com/ https://example.org/
"""

import sys

sys.path.insert(0, __file__.rsplit("/examples/", 1)[0])  # run from a checkout

from drover import Producer, drv  # noqa: E402

endpoint = sys.argv[1] if len(sys.argv) > 1 else "tcp://127.0.0.1:5570"
urls = sys.argv[2:] or ["https://example.com/"]

with Producer(endpoint) as p:
    for url, s in zip(urls, p.submit([("demo", "html", u) for u in urls])):
        print("%-40s %-9s job %d %s" % (url, drv.SUBMIT_STATUSES[s.status], s.job_id, s.reason))
    # Ledger only: request, do the work yourself, then mark it done.
    key = ("demo", "ledger", urls[0])
    if p.request([key])[0].verdict == drv.OK:
        print("this process owns", key, "- working on it")
        p.done([key])
    print("asking again:", drv.VERDICTS[p.request([key])[0].verdict], p.request([key])[0].reason)
