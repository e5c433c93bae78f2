"""rigbook bench: an OpenAI streaming client that measures a server the way published numbers were measured.

Library use: build a :class:`MeasureRequest`, call :func:`measure` (or :func:`measure_async` inside
a running event loop) and read the :class:`Measurement` it returns.
"""

from rigbook.bench.measure import Measurement, Verdict, measure, measure_async
from rigbook.bench.request import MeasureRequest

__all__ = ["MeasureRequest", "Measurement", "Verdict", "measure", "measure_async"]
