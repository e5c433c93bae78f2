"""rigbook bench: an OpenAI streaming client that measures a server the way published numbers were measured.

Library use: build a :class:`MeasureRequest`, call :func:`measure` (or :func:`measure_async` inside
a running event loop) and read the :class:`Measurement` it returns.

The names are imported on first use: a bench worker process imports only the modules it runs, not
the whole measurement (which costs it about half a second of start-up per worker).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rigbook.bench.measure import Measurement, Verdict, measure, measure_async
    from rigbook.bench.request import MeasureRequest

__all__ = ["MeasureRequest", "Measurement", "Verdict", "measure", "measure_async"]
_HOMES = {"MeasureRequest": "rigbook.bench.request"} | dict.fromkeys(
    ["Measurement", "Verdict", "measure", "measure_async"], "rigbook.bench.measure"
)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
