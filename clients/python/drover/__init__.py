"""drover's Python client: workers and producers for a drover coordinator over DRV/2
(docs/PROTOCOL.md). Standard library and pyzmq only; the codec (drover.drv) and URL
normalisation (drover.url) need no pyzmq."""

from . import drv
from .drv import Key
from .url import URLRefused, fingerprint, normalize

_LAZY = {  # these need pyzmq: imported on first use
    "Producer": "producer", "Submitted": "producer", "Verdict": "producer", "DroverError": "session",
    "Worker": "worker", "Job": "worker", "Outcome": "worker", "Ok": "worker", "Internal": "worker",
    "External": "worker", "Throttled": "worker",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module("." + _LAZY[name], __name__), name)
    raise AttributeError("module 'drover' has no attribute %r" % name)


__all__ = ["drv", "Key", "URLRefused", "fingerprint", "normalize"] + sorted(_LAZY)
