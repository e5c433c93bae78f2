"""Compare perf numbers like with like: line points up, judge each pair's conditions, derive only valid figures.

``compare_refs(["A", "B"])`` resolves each argument (bench result file, recipe
file or catalog slug) to its perf points with resolved conditions, lines them
up by concurrency and context length, and returns a :class:`Comparison` whose
verdicts say, per aspect (raw throughput, power efficiency, scaling), whether
the ratio means anything and why not. ``docs/compare.md`` states every rule.
"""

from rigbook.compare.build import compare_refs, compare_sources
from rigbook.comparison import Comparison

__all__ = ["Comparison", "compare_refs", "compare_sources"]
