"""Service-level objectives: parse them, write them canonically, and judge requests against them.

An SLO is a set of terms, each a percentile over a probe's requests of one per-request value,
held to a threshold: ``per_user_tok_s>=20`` (the median request's decode rate is at least 20),
``ttft_p99_ms<=2000``. The error rate is a term too, always present (``error_rate<=0`` unless the
SLO says otherwise), so a server that fails requests never meets an SLO by accident.

The canonical text (terms in a fixed order, numbers in their shortest form) is what two
capacities must share to be compared or ranked together.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rigbook.bench.metrics import percentile
from rigbook.bench.result import RequestRecord
from rigbook.errors import InputError

Op = Literal[">=", "<="]


class TermKind(BaseModel):
    """One kind of term the parser knows: its per-request value, percentile and direction."""

    model_config = ConfigDict(frozen=True)

    name: str
    label: str = Field(description="How the sentence names it, e.g. 'TTFT p99'.")
    op: Op
    quantile: float | None = Field(
        description="Percentile over requests, 0-100; None for error_rate."
    )
    unit: str


# Canonical order: the order terms are written in and the sentence lists them.
KINDS: dict[str, TermKind] = {
    k.name: k
    for k in (
        TermKind(name="per_user_tok_s", label="per-user rate", op=">=", quantile=50, unit="tok/s"),
        TermKind(
            name="per_user_tok_s_p10", label="per-user rate p10", op=">=", quantile=10, unit="tok/s"
        ),
        TermKind(name="ttft_p50_ms", label="TTFT p50", op="<=", quantile=50, unit="ms"),
        TermKind(name="ttft_p90_ms", label="TTFT p90", op="<=", quantile=90, unit="ms"),
        TermKind(name="ttft_p99_ms", label="TTFT p99", op="<=", quantile=99, unit="ms"),
        TermKind(name="itl_p99_ms", label="ITL p99", op="<=", quantile=99, unit="ms"),
        TermKind(name="error_rate", label="error rate", op="<=", quantile=None, unit=""),
    )
}
ALIASES = {"per_user_tok_s_p50": "per_user_tok_s"}
ORDER = list(KINDS)


def _ttft_ms(r: RequestRecord) -> float | None:
    return None if r.first_token_s is None else 1000.0 * (r.first_token_s - r.sent_s)


# The per-request value each percentile term reads; the same numbers the bench's cell metrics use.
VALUES: dict[str, Callable[[RequestRecord], float | None]] = {
    "per_user_tok_s": lambda r: r.decode_tok_s,
    "per_user_tok_s_p10": lambda r: r.decode_tok_s,
    "ttft_p50_ms": _ttft_ms,
    "ttft_p90_ms": _ttft_ms,
    "ttft_p99_ms": _ttft_ms,
    "itl_p99_ms": lambda r: r.itl_ms.p99,
}


class SloTerm(BaseModel):
    """One term: ``name op threshold``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    op: Op
    threshold: float

    @property
    def kind(self) -> TermKind:
        return KINDS[self.name]

    def text(self) -> str:
        return f"{self.name}{self.op}{_num(self.threshold)}"

    def holds(self, value: float | None) -> bool:
        """True when ``value`` meets the term; no value never does."""
        if value is None:
            return False
        return value >= self.threshold if self.op == ">=" else value <= self.threshold

    def margin(self, value: float | None) -> float | None:
        """Headroom as a fraction of the threshold: positive passes, negative fails."""
        if value is None:
            return None
        if self.threshold == 0:  # no fraction of nothing: met exactly, or not at all
            return 0.0 if value == 0 else None
        diff = value - self.threshold if self.op == ">=" else self.threshold - value
        return diff / self.threshold

    def phrase(self) -> str:
        """The term as a person reads it: '≥ 20 tok/s each', 'TTFT p99 ≤ 2 s'."""
        sign = "≥" if self.op == ">=" else "≤"
        if self.name == "per_user_tok_s":
            return f"{sign} {_num(self.threshold)} tok/s each"
        if self.name == "per_user_tok_s_p10":
            return f"{sign} {_num(self.threshold)} tok/s for 9 in 10 requests"
        if self.name == "error_rate":
            return (
                "no failed request"
                if self.threshold == 0
                else f"error rate {sign} {_num(_scaled(self.threshold, 100))}%"
            )
        if self.kind.unit == "ms" and self.threshold >= 1000:
            return f"{self.kind.label} {sign} {_num(_scaled(self.threshold, Decimal(1) / 1000))} s"
        return f"{self.kind.label} {sign} {_num(self.threshold)} ms"


class Slo(BaseModel):
    """Every term an answer must meet; ``text`` is the canonical form."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    terms: list[SloTerm]
    text: str = Field(description="Canonical: terms in a fixed order, shortest numbers.")

    def term(self, name: str) -> SloTerm | None:
        return next((t for t in self.terms if t.name == name), None)


def _scaled(value: float | str, factor: Decimal | int) -> float:
    """``value`` times ``factor`` in decimal, then as a float: 0.7% is 0.007 and 2.3 s is 2300 ms
    exactly as written, where binary floats give 0.006999999999999999 (a different canonical SLO)
    and 0.007 * 100 gives 0.7000000000000001."""
    return float(Decimal(value if isinstance(value, str) else repr(value)) * factor)


def _num(value: float) -> str:
    """The shortest text that reads back as ``value``: 20, 0.01, 2500 (never 2.5e+03 for a
    threshold a person writes, and never a rounded one that would merge two SLOs)."""
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


_TERM = re.compile(
    r"^\s*([a-z0-9_]+)\s*(>=|<=|=>|=<|>|<|=)\s*([0-9.eE+-]+)\s*(%|ms|s|tok/s)?\s*$",
    re.IGNORECASE,
)
# A unit written after a threshold, per the term's own unit: the factor to that unit.
_UNITS: dict[str, dict[str, Decimal]] = {
    "ms": {"ms": Decimal(1), "s": Decimal(1000)},
    "tok/s": {"tok/s": Decimal(1)},
    "": {"%": Decimal("0.01")},
}
_REMEDY = (
    "Write terms like per_user_tok_s>=20,ttft_p99_ms<=2000. Terms: "
    + ", ".join(f"{k.name}{k.op}N" for k in KINDS.values())
    + " (error_rate as 0.01 or 1%; a time may be written in ms or s, e.g. ttft_p99_ms<=2s)."
)


def parse_slo(text: str) -> Slo:
    """Parse ``"per_user_tok_s>=20,ttft_p99_ms<=2000"``; bad input is ``E_SLO_INVALID``.

    Term order, spaces, case, the p50 alias, units (``2s`` for ``2000`` ms, ``1%`` for ``0.01``)
    and the way a number is written do not change the canonical ``text``."""
    found: dict[str, SloTerm] = {}
    parts = [p for p in (text or "").split(",") if p.strip()]
    if not parts:
        raise InputError("E_SLO_INVALID", "the SLO is empty", _REMEDY)
    for part in parts:
        m = _TERM.match(part)
        if not m:
            raise InputError("E_SLO_INVALID", f"cannot read SLO term {part.strip()!r}", _REMEDY)
        raw_name, op, raw_value, unit = m.groups()
        raw_name, unit = raw_name.lower(), (unit or "").lower()
        name = ALIASES.get(raw_name, raw_name)
        kind = KINDS.get(name)
        if kind is None:
            raise InputError("E_SLO_INVALID", f"unknown SLO term {raw_name!r}", _REMEDY)
        if op not in (">=", "<="):
            raise InputError(
                "E_SLO_INVALID",
                f"{part.strip()!r}: use {kind.op} (an SLO is a bound that includes its threshold)",
                _REMEDY,
            )
        if op != kind.op:
            better = "higher" if kind.op == ">=" else "lower"
            raise InputError(
                "E_SLO_INVALID",
                f"{part.strip()!r}: {name} is better {better}, so its term is {name}{kind.op}N",
                _REMEDY,
            )
        factor = _UNITS[kind.unit].get(unit) if unit else Decimal(1)
        if factor is None:
            raise InputError(
                "E_SLO_INVALID",
                f"{part.strip()!r}: {name} is in {kind.unit or 'a fraction (or %)'}, not {unit}",
                _REMEDY,
            )
        try:
            value = _scaled(raw_value, factor)
        except (InvalidOperation, OverflowError):
            raise InputError(
                "E_SLO_INVALID", f"{part.strip()!r}: {raw_value!r} is not a number", _REMEDY
            ) from None
        if not math.isfinite(value) or value < 0 or (name == "error_rate" and value >= 1):
            raise InputError(
                "E_SLO_INVALID", f"{part.strip()!r}: the threshold is out of range", _REMEDY
            )
        if name in found:
            raise InputError("E_SLO_INVALID", f"{name} is given twice", _REMEDY)
        found[name] = SloTerm(name=name, op=kind.op, threshold=value)
    if set(found) == {"error_rate"}:
        raise InputError("E_SLO_INVALID", "the SLO names no speed or latency term", _REMEDY)
    found.setdefault("error_rate", SloTerm(name="error_rate", op="<=", threshold=0.0))
    terms = [found[n] for n in ORDER if n in found]
    return Slo(terms=terms, text=",".join(t.text() for t in terms))


def canonical_slo(text: str) -> str | None:
    """The canonical form of an SLO's text; None when it is not an SLO this version reads.

    ``"per_user_tok_s >= 5, ttft_p90_ms <= 5s"`` and ``"ttft_p90_ms<=5000,per_user_tok_s>=5"``
    are one SLO: ``per_user_tok_s>=5,ttft_p90_ms<=5000,error_rate<=0``."""
    try:
        return parse_slo(text).text
    except InputError:
        return None


# A tail of share t goes unseen in n requests with probability (1 - t)^n: a term rests on enough
# requests when a tail as common as the one it bounds shows with at least this probability.
TAIL_SEEN = 0.95


def tail_share(term: SloTerm) -> float | None:
    """The share of requests a percentile term lets past its threshold: 0.01 for a p99 bound
    (``<=``), 0.1 for a p10 floor (``>=``), 0.5 for a median; None for the error rate."""
    q = term.kind.quantile
    if q is None:
        return None
    return (100.0 - q) / 100.0 if term.op == "<=" else q / 100.0


def requests_needed(term: SloTerm) -> int:
    """Requests a term rests on before a pass means something: the fewest ``n`` with
    ``1 - (1 - t)^n >= 0.95`` for its tail share ``t`` (299 for p99, 29 for p90 and p10, 5 for a
    median). The error rate needs no more than one request: any failure counts against it."""
    t = tail_share(term)
    if t is None:
        return 1
    return math.ceil(math.log(1.0 - TAIL_SEEN) / math.log(1.0 - t) - 1e-9)


def unseen_tail(n: int) -> float:
    """The tail share that ``n`` requests miss with probability 0.05: a tail this common or rarer
    may be absent from a probe of ``n`` (``1 - 0.05^(1/n)``)."""
    return 1.0 - (1.0 - TAIL_SEEN) ** (1.0 / n) if n else 1.0


class Reading(BaseModel):
    """One term read on one probe."""

    term: str
    value: float | None
    passed: bool
    requests: int | None = Field(
        default=None,
        description="Requests the value rests on (the succeeded ones a percentile reads; every "
        "request for the error rate).",
    )
    needed: int | None = Field(
        default=None,
        description="Requests the term's rule asks for (requests_needed): a pass on fewer is "
        "stated with the tail it could miss.",
    )
    margin: float | None = Field(
        default=None, description="Headroom as a fraction of the threshold."
    )
    broken_early: bool = Field(
        default=False, description="Failed beyond doubt before the probe ended."
    )


def _counted(records: list[RequestRecord]) -> list[RequestRecord]:
    """The requests a burst cell's metrics count: succeeded and not cut."""
    return [r for r in records if r.ok and not r.cut_at_window]


def read_term(term: SloTerm, records: list[RequestRecord]) -> Reading:
    """The term's value over a finished probe's requests, and whether it holds."""
    if term.name == "error_rate":
        value = sum(not r.ok for r in records) / len(records) if records else None
    else:
        values = [v for r in _counted(records) if (v := VALUES[term.name](r)) is not None]
        quantile = term.kind.quantile
        assert quantile is not None  # only error_rate has none
        value = percentile(values, quantile) if values else None
    return Reading(
        term=term.name,
        value=value,
        passed=term.holds(value),
        margin=term.margin(value),
        requests=len(records) if term.name == "error_rate" else len(values),
        needed=requests_needed(term),
    )


def _favoured(name: str, r: RequestRecord, lag_ms: float) -> float | None:
    """A request's value for term ``name`` had every stamp moved by ``lag_ms`` in the server's
    favour: a first token or token gap read up to ``lag_ms`` late is that much shorter, and a
    decode window whose ends were stamped up to ``lag_ms`` apart is that much shorter too."""
    value = VALUES[name](r)
    if value is None:
        return None
    if name.startswith("per_user_tok_s"):
        if r.first_token_s is None or r.last_token_s is None:
            return value
        window = r.last_token_s - r.first_token_s
        shorter = window - lag_ms / 1000.0
        return math.inf if shorter <= 0 else value * window / shorter
    return max(0.0, value - lag_ms)


def could_pass_with_lag(term: SloTerm, records: list[RequestRecord], lag_ms: float) -> bool:
    """True when ``term`` would hold had the client's lag of ``lag_ms`` moved every stamp in the
    server's favour: only then could a late client have turned the server's pass into a fail.
    The error rate is never the client's lag."""
    if term.name == "error_rate":
        return read_term(term, records).passed
    values = [v for r in _counted(records) if (v := _favoured(term.name, r, lag_ms)) is not None]
    quantile = term.kind.quantile
    assert quantile is not None  # only error_rate has none
    return term.holds(percentile(values, quantile) if values else None)


def broken_beyond_doubt(term: SloTerm, records: list[RequestRecord], planned: int) -> bool:
    """True when the requests seen so far fail ``term`` whatever the ``planned - len(records)``
    still to come turn out to be.

    For a percentile term: the sorted final values put the percentile between two neighbours;
    when enough requests already violate that even the better neighbour must be a violator, no
    later request can save it.
    """
    if term.name == "error_rate":
        return sum(not r.ok for r in records) / planned > term.threshold
    values = [v for r in _counted(records) if (v := VALUES[term.name](r)) is not None]
    violators = sum(not term.holds(v) for v in values)
    if not violators:
        return False
    # The counted total ends somewhere in [len(values), len(values) + still]; the violators needed
    # never fall as the total grows, so the largest total is the one to beat.
    total = len(values) + planned - len(records)
    quantile = term.kind.quantile
    assert quantile is not None  # only error_rate has none
    pos = (total - 1) * quantile / 100.0
    # Higher is worse: the percentile fails when its lower neighbour violates, i.e. when at least
    # total - floor(pos) values do. Lower is worse: when the upper one does, ceil(pos) + 1 values.
    needed = total - math.floor(pos) if term.op == "<=" else math.ceil(pos) + 1
    return violators >= needed
