"""Speculative decoding measured: a cell's drafted and accepted tokens, from the engine's counters.

A drafter's speed-up depends on how many drafted tokens the target accepts, and that depends
on the text. The engines count it themselves in Prometheus ``/metrics``:

- llama-server (``--metrics``): ``llamacpp:spec_decode_num_drafts_total`` (verification steps
  that carried a draft), ``…_num_draft_tokens_total``, ``…_num_accepted_tokens_total`` and
  ``…_num_accepted_tokens_per_pos_total{position=…}``;
- vLLM: ``vllm:spec_decode_num_drafts``, ``…_num_draft_tokens``, ``…_num_accepted_tokens`` and
  ``…_num_accepted_tokens_per_pos``.

Read before and after a cell (with the token counters, rigbook.bench.server_metrics), their
differences give the cell's acceptance. The mean acceptance length is tokens per target step
where a draft was verified: ``1 + accepted / drafts``, as both engines log it.
"""

from __future__ import annotations

from prometheus_client.metrics_core import Metric
from pydantic import BaseModel, ConfigDict

from rigbook.bench.metrics import distribution
from rigbook.bench.result import RequestAcceptance, RequestRecord, Speculation
from rigbook.findings import Finding

# engine -> metric family prefix (prometheus_client strips "_total" from counter family names)
PREFIXES: dict[str, str] = {
    "llama.cpp": "llamacpp:spec_decode_num_",
    "vllm": "vllm:spec_decode_num_",
}
# Method names that mean "no drafter" (a recipe may say so explicitly).
NO_SPECULATION = frozenset({"", "none", "off", "no", "false"})


class SpecCounters(BaseModel):
    """One reading of an engine's speculative-decoding counters (summed over label sets)."""

    model_config = ConfigDict(extra="forbid")

    drafts: float | None = None
    draft_tokens: float = 0.0
    accepted_tokens: float = 0.0
    accepted_per_position: dict[int, float] = {}


def parse(engine: str, families: list[Metric]) -> SpecCounters | None:
    """The speculative counters of ``engine`` in parsed /metrics families, or None where the
    page has none (no speculator, or an engine build that does not count)."""
    prefix = PREFIXES.get(engine)
    if prefix is None:
        return None
    values: dict[str, float] = {}
    positions: dict[int, float] = {}
    for fam in families:
        if not fam.name.startswith(prefix):
            continue
        what = fam.name[len(prefix) :]
        for sample in fam.samples:
            if not sample.name.endswith("_total"):
                continue  # the _created samples prometheus_client adds
            if what == "accepted_tokens_per_pos":
                pos = int(sample.labels["position"])
                positions[pos] = positions.get(pos, 0.0) + sample.value
            else:
                values[what] = values.get(what, 0.0) + sample.value
    if "draft_tokens" not in values:
        return None
    return SpecCounters(
        drafts=values.get("drafts"),
        draft_tokens=values["draft_tokens"],
        accepted_tokens=values.get("accepted_tokens", 0.0),
        accepted_per_position=positions,
    )


def over_cell(
    engine: str, before: SpecCounters | None, after: SpecCounters | None
) -> Speculation | None:
    """The cell's acceptance from two readings, or None where either has no counters."""
    if before is None or after is None:
        return None
    drafted = after.draft_tokens - before.draft_tokens
    accepted = after.accepted_tokens - before.accepted_tokens
    drafts = (
        after.drafts - before.drafts
        if after.drafts is not None and before.drafts is not None
        else None
    )
    per_position = [
        after.accepted_per_position[p] - before.accepted_per_position.get(p, 0.0)
        for p in sorted(after.accepted_per_position)
    ]
    return Speculation(
        engine=engine,
        drafts=drafts,
        draft_tokens=drafted,
        accepted_tokens=accepted,
        acceptance_rate=accepted / drafted if drafted > 0 else None,
        mean_acceptance_length=1.0 + accepted / drafts if drafts else None,
        accepted_per_position=per_position,
    )


def with_requests(counted: Speculation | None, records: list[RequestRecord]) -> Speculation | None:
    """The cell's acceptance with what each response reported (llama-server's ``timings``), cross-
    checked against the counters where every request finished; the responses' sums alone where the
    engine serves no counters. A response that drafted nothing reports nothing."""
    reported = [r for r in records if r.draft_tokens is not None]
    if not reported:
        return counted
    drafted = sum(r.draft_tokens or 0 for r in reported)
    accepted = sum(r.accepted_draft_tokens or 0 for r in reported)
    finished = all(r.ok and not r.cut_at_window for r in records)
    per = RequestAcceptance(
        requests=len(reported),
        draft_tokens=drafted,
        accepted_tokens=accepted,
        acceptance_rate=distribution(
            [(r.accepted_draft_tokens or 0) / r.draft_tokens for r in reported if r.draft_tokens]
        ),
        matches_counters=counted.draft_tokens == drafted and counted.accepted_tokens == accepted
        if counted is not None and finished
        else None,
    )
    if counted is None:
        # Only llama-server reports drafts in its responses.
        return Speculation(
            engine="llama.cpp",
            draft_tokens=drafted,
            accepted_tokens=accepted,
            acceptance_rate=accepted / drafted if drafted else None,
            per_request=per,
        )
    return counted.model_copy(update={"per_request": per})


def pooled_length(cells: list[Speculation | None]) -> float | None:
    """The mean acceptance length over repeated cells, pooled (1 + all accepted / all drafts), or
    None unless every cell counted its drafts."""
    if not cells or any(s is None or s.drafts is None for s in cells):
        return None
    drafts = sum(s.drafts for s in cells if s and s.drafts)
    accepted = sum(s.accepted_tokens for s in cells if s)
    return 1.0 + accepted / drafts if drafts else None


def declared(method: str | None) -> bool:
    """True when a recipe names a speculative method (not one of the ways to say none)."""
    return method is not None and method.strip().lower() not in NO_SPECULATION


def missing_warning(index: int, concurrency: int, method: str | None) -> Finding:
    """W_SPEC_NO_ACCEPTANCE for a cell whose engine runs a speculator but gave no acceptance
    counters."""
    return Finding.make(
        "W_SPEC_NO_ACCEPTANCE",
        f"cell {index} (concurrency {concurrency}): the recipe runs a speculator ({method}) but "
        "the engine's /metrics gave no drafted or accepted tokens; its tok/s cannot be told "
        "apart from the drafter's acceptance",
    )


def summary(s: Speculation) -> str:
    """A cell's acceptance in words, for the terminal and the report."""
    if s.draft_tokens <= 0:
        return "the speculator drafted no tokens"
    line = (
        f"{s.accepted_tokens:.0f} of {s.draft_tokens:.0f} drafted tokens accepted "
        f"({100 * (s.acceptance_rate or 0.0):.0f} %)"
    )
    if s.mean_acceptance_length is not None and s.drafts is not None:
        line += (
            f", mean acceptance length {s.mean_acceptance_length:.2f} tokens per step "
            f"over {s.drafts:.0f} drafts"
        )
    per = s.per_request
    if per is not None and per.acceptance_rate.p50 is not None:
        line += f"; per request, median acceptance rate {100 * per.acceptance_rate.p50:.0f} %"
        if per.matches_counters is not None:
            line += (
                " (responses agree with the counters)"
                if per.matches_counters
                else f" (responses: {per.accepted_tokens} of {per.draft_tokens}, not the counters')"
            )
    return line
