"""The same-stack baseline of `make bench-hub`: uvicorn (httptools, uvloop, N workers) serving bytes
from memory, with no framework, no database and no hub code.

The answers are the hub's own, captured by the benchmark before it runs: a pickle file of
``{path with query: (content type, body)}`` named by ``RIGBOOK_BASELINE_ANSWERS``. Run as

    uvicorn benchmarks.hub.baseline:app --workers 2 --loop uvloop --http httptools
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

ANSWERS: dict[str, tuple[str, bytes]] = pickle.loads(
    Path(os.environ["RIGBOOK_BASELINE_ANSWERS"]).read_bytes()
)
NOT_FOUND = [(b"content-type", b"text/plain"), (b"content-length", b"9")]


async def app(scope, receive, send) -> None:
    if scope["type"] != "http":
        return
    query = scope["query_string"]
    found = ANSWERS.get(scope["path"] + ("?" + query.decode() if query else ""))
    if found is None:
        await send({"type": "http.response.start", "status": 404, "headers": NOT_FOUND})
        await send({"type": "http.response.body", "body": b"not found"})
        return
    kind, body = found
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", kind.encode()),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
