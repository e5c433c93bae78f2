"""An OpenAI-compatible endpoint: its base URL, whether it runs here, what it serves, and the
smoke test.

``bench`` streams its measured requests itself (:mod:`rigbook.bench.backend`) but takes the base
URL and the discovery from here, as ``smoke`` and an external recipe do.
"""

from rigbook.endpoint.discover import ServerInfo, discover
from rigbook.endpoint.local import is_local
from rigbook.endpoint.smoke import SmokeResult, smoke
from rigbook.endpoint.url import base_url, v1_url

__all__ = ["ServerInfo", "SmokeResult", "base_url", "discover", "is_local", "smoke", "v1_url"]
