"""`rigbook capacity`: how many users a server holds at a service-level objective.

``parse_slo`` reads the SLO, :func:`run_capacity` searches an endpoint with bench cells as
probes (doubling, bisection, a re-run of the boundary) and returns a :class:`CapacityResult`
whose answer carries the one-line sentence and whose ``perf_points`` hold the ``users_at_slo``
point. ``docs/capacity.md`` says what the number means.
"""

from rigbook.capacity.result import CapacityResult, load_capacity
from rigbook.capacity.run import CapacitySpec, capacity, run_capacity
from rigbook.capacity.search import SearchSettings
from rigbook.capacity.slo import Slo, parse_slo

__all__ = [
    "CapacityResult",
    "CapacitySpec",
    "SearchSettings",
    "Slo",
    "capacity",
    "load_capacity",
    "parse_slo",
    "run_capacity",
]
