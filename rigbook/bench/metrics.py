"""Metrics: turn raw streams into request records, and request records into a cell.

Both the live runner and the journal rebuild go through :func:`build_cell`, so
a result rebuilt after a kill has exactly the numbers a finished run would.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

# np.percentile imports numpy.ma on its first call, long enough to stall a stream's reads:
# imported with this module, so the first record built in a cell does not stall the streams still
# reading (benchmarks/runs/2026-12-04-cpu-client/notes.md, "The first cell's stall").
import numpy.ma

from rigbook.bench.result import (
    Cell,
    CellMetrics,
    CellTelemetry,
    ClientLoad,
    Distribution,
    RequestRecord,
    TokenSource,
)
from rigbook.openai.stream import RawRequest

# Weakest last: a cell reports the weakest source any of its requests used. ``client_length``
# (the count taken as max_tokens on a "length" finish) is only in results written before it was
# dropped: a server may stop at a limit of its own below max_tokens.
_SOURCE_ORDER: list[TokenSource] = [
    "server_continuous",
    "server_final",
    "client_length",
    "client_fallback",
]

# A reply whose token events (at least BUFFERED_EVENTS) all arrived within BUFFERED_SPAN_S and
# within BUFFERED_SHARE of its time to first token came in one piece: something between the
# engine and the client (a proxy, a buffering server) held the stream back, so its TTFT is the
# whole reply and its stamps time nothing.
BUFFERED_EVENTS = 3
BUFFERED_SPAN_S = 0.001
BUFFERED_SHARE = 0.01


def percentile(values, q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    return float(np.percentile(np.asarray(values, dtype=float), q))


def distribution(values) -> Distribution:
    """n, mean, min, p10, p50, p90, p99, max of ``values`` (all null when empty)."""
    vals = np.asarray(
        [v for v in values if v is not None] if isinstance(values, list) else values, dtype=float
    )
    if vals.size == 0:
        return Distribution()
    p10, p50, p90, p99 = np.percentile(vals, [10, 50, 90, 99])
    return Distribution(
        n=int(vals.size),
        mean=float(vals.mean()),
        min=float(vals.min()),
        max=float(vals.max()),
        p10=float(p10),
        p50=float(p50),
        p90=float(p90),
        p99=float(p99),
    )


def attribute_tokens(raw: RawRequest) -> tuple[TokenSource, np.ndarray]:
    """The tokens each token-bearing event carried, and the source the counts came from."""
    n = raw.events
    total = (raw.final_usage or {}).get("completion_tokens")
    if raw.continuous:
        usage = np.frombuffer(raw.usage, dtype=np.int64) if n else np.zeros(0, dtype=np.int64)
        known = usage >= 0
        # An event without usage carried none we can see; the next usage covers it.
        seen = np.maximum.accumulate(np.where(known, usage, 0)) if n else usage
        before = np.concatenate(([0], seen[:-1])) if n else seen
        tokens = np.where(known, np.maximum(usage - before, 0), 0).astype(float)
        # Usage that arrived after the last token event (a final usage-only event) belongs to it.
        if total is not None and n and total > seen[-1]:
            tokens[-1] += total - seen[-1]
        return "server_continuous", tokens
    if total is not None and n:
        # Only the total is known. An engine sends its first token alone (the prefill yields one;
        # a stream interval or a drafter's accepted run only groups the later ones), so when the
        # events carry several tokens the first is taken as one and the rest spread evenly over
        # the others: spread over all, a short reply's rate read low by (mean - 1) / (total - 1).
        if n > 1 and total > n:
            return "server_final", np.concatenate(([1.0], np.full(n - 1, (total - 1) / (n - 1))))
        return "server_final", np.full(n, total / n)
    # No usage: the tokens the client saw, one per token-bearing event. Never max_tokens, even on
    # a "length" finish: the limit a server stopped at may be its own.
    return "client_fallback", np.ones(n)


def one_piece(events: int, sent: float, first: float | None, last: float | None) -> bool:
    """Whether a reply of ``events`` token events, sent at ``sent``, whose first and last arrived
    at ``first`` and ``last``, came in one piece (see ``BUFFERED_SPAN_S``)."""
    if events < BUFFERED_EVENTS or first is None or last is None:
        return False
    span = last - first
    return span <= BUFFERED_SPAN_S and span <= BUFFERED_SHARE * (first - sent)


def buffered_requests(records: list[RequestRecord]) -> list[RequestRecord]:
    """The completed requests whose reply came in one piece: ``W_STREAM_BUFFERED``."""
    return [
        r
        for r in records
        if r.ok and one_piece(r.chunks, r.sent_s, r.first_token_s, r.last_token_s)
    ]


def to_record(
    raw: RawRequest,
    *,
    cell: int,
    index: int,
    prompt_index: int,
    t0: float,
    max_tokens: int,
    hold_length: bool,
    window: tuple[float, float] | None = None,
) -> RequestRecord:
    """One request's record; ``t0`` is the cell start on the same clock as ``raw``."""
    source, tokens = attribute_tokens(raw)
    n = raw.events
    times = np.frombuffer(raw.times, dtype=float) if n else np.zeros(0)
    is_reasoning = (
        np.frombuffer(bytes(raw.reasoning), dtype=np.uint8).astype(bool) if n else np.zeros(0, bool)
    )
    output = float(tokens.sum())
    reasoning: float | None = raw.reasoning_tokens_reported
    if reasoning is None:
        reasoning = float(tokens[is_reasoning].sum())
    error = raw.error
    cut = raw.cancelled and error is None
    if error is None and not cut:
        counted_short = round(output) < max_tokens
        if not n:
            error = (
                f"empty: the stream closed without a token (finish_reason {raw.finish_reason}); "
                "a server that serves one request at a time may have dropped it"
            )
        elif hold_length and counted_short:
            error = (
                f"short: {round(output)} of {max_tokens} tokens (finish_reason {raw.finish_reason})"
            )
            if source == "client_fallback":
                error += (
                    "; the server sent no usage, so these are its token events, and one event "
                    "may carry several tokens: ask it for usage (stream_options.include_usage)"
                )
    first = float(times[0]) if n else None
    last = float(times[-1]) if n else None
    content = np.flatnonzero(~is_reasoning)
    first_content = float(times[content[0]]) if content.size else None
    decode = itl_mean = None
    gaps = np.zeros(0)
    after_first = output - (float(tokens[0]) if n else 0.0)
    # A reply that came in one piece has no decode time: its stamps are one read's.
    if (
        first is not None
        and last is not None
        and last > first
        and after_first > 0
        and not one_piece(n, raw.sent, first, last)
    ):
        decode = after_first / (last - first)
        itl_mean = 1000.0 * (last - first) / after_first
        carried = tokens[1:]
        bearing = carried > 0
        gaps = 1000.0 * np.diff(times)[bearing] / carried[bearing]
    window_tokens = None
    if window is not None:
        lo, hi = window
        window_tokens = round(float(tokens[(times >= lo) & (times <= hi)].sum()), 6)

    def rel(t: float | None) -> float | None:
        return None if t is None else t - t0

    return RequestRecord(
        cell=cell,
        index=index,
        prompt_index=prompt_index,
        sent_s=raw.sent - t0,
        first_token_s=rel(first),
        first_content_s=rel(first_content),
        last_token_s=rel(last),
        done_s=rel(raw.done),
        prompt_tokens=raw.prompt_tokens,
        output_tokens=round(output),
        reasoning_tokens=round(reasoning),
        first_chunk_tokens=float(tokens[0]) if n else 0.0,
        chunks=n,
        token_source=source,
        finish_reason=raw.finish_reason,
        ok=error is None,
        error=error,
        cut_at_window=cut,
        decode_tok_s=decode,
        itl_ms_mean=itl_mean,
        itl_ms=distribution(gaps),
        window_tokens=window_tokens,
        draft_tokens=raw.draft_tokens,
        accepted_draft_tokens=raw.draft_accepted,
    )


def concurrency_reached(records: list[RequestRecord]) -> int:
    """Most requests in flight at once, from their send and close times."""
    events: list[tuple[float, int]] = []
    for r in records:
        events.append((r.sent_s, 1))
        events.append((r.done_s if r.done_s is not None else r.sent_s, -1))
    peak = cur = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):
        cur += step
        peak = max(peak, cur)
    return peak


def build_cell(
    *,
    index: int,
    mode: Literal["burst", "sustained"],
    concurrency: int,
    records: list[RequestRecord],
    requests_planned: int | None,
    duration_s: float | None,
    window: tuple[float, float] | None,
    telemetry: CellTelemetry,
    client: ClientLoad | None,
    cut_short: bool,
) -> Cell:
    """A cell from its requests. Any failed request makes the cell invalid; it is then never a perf point.

    ``window`` (relative to the cell start) is the sustained measurement window; burst cells
    span from the first send to the last token.
    """
    failed = [r for r in records if not r.ok]
    # Sustained windows cut the streams still running at their end; those streams measured
    # honestly up to the cut, so their rates count (a window shorter than one reply has no others).
    done = [r for r in records if r.ok and (mode == "sustained" or not r.cut_at_window)]
    reasons = [f"request {r.index}: {r.error}" for r in failed]
    if cut_short:
        reasons.append("cut short: the run was stopped during this cell")
    if mode == "burst" and not done and not cut_short and not failed:
        reasons.append("no request completed")
    if mode == "burst" and requests_planned and not cut_short and len(records) < requests_planned:
        # A request that never ran leaves no failure behind: without this the cell would look
        # whole with fewer requests than it planned.
        reasons.append(
            f"{requests_planned - len(records)} of {requests_planned} planned requests never ran "
            "(the client lost them)"
        )
    if mode == "burst":
        tokens = sum(r.output_tokens for r in done)
        ends = [r.last_token_s for r in done if r.last_token_s is not None]
        starts = [r.sent_s for r in done]
        span = (max(ends) - min(starts)) if ends and starts else None
    else:
        tokens = round(sum(r.window_tokens or 0 for r in done))
        span = (window[1] - window[0]) if window else None
        if not tokens and not cut_short and not failed:
            reasons.append("no stream gave a token inside the window")
    aggregate = tokens / span if span and span > 0 else None
    ttft = [1000.0 * (r.first_token_s - r.sent_s) for r in done if r.first_token_s is not None]
    ttfct = [1000.0 * (r.first_content_s - r.sent_s) for r in done if r.first_content_s is not None]
    prefill = [
        r.prompt_tokens / (r.first_token_s - r.sent_s)
        for r in done
        if r.prompt_tokens and r.first_token_s is not None and r.first_token_s > r.sent_s
    ]
    # The requests that count say where their tokens came from; a failed one that got no usage
    # (a refused connection) says nothing about how the server counts.
    sources = {r.token_source for r in done}
    source = max(sources, key=_SOURCE_ORDER.index, default=None)
    metrics = CellMetrics(
        per_request_decode_tok_s=distribution(
            [r.decode_tok_s for r in done if r.decode_tok_s is not None]
        ),
        aggregate_tok_s=aggregate,
        ttft_ms=distribution(ttft),
        ttfct_ms=distribution(ttfct),
        itl_ms=distribution([r.itl_ms_mean for r in done if r.itl_ms_mean is not None]),
        itl_ms_worst_p99=max(
            (r.itl_ms.p99 for r in done if r.itl_ms.p99 is not None), default=None
        ),
        prefill_tok_s=distribution(prefill),
        output_tokens=distribution([r.output_tokens for r in done]),
        concurrency_reached=concurrency_reached(records),
        requests_ok=len(done),
        requests_failed=len(failed),
        window_s=span,
        tokens_in_window=tokens,
    )
    if telemetry.available and telemetry.energy_j_total is not None and tokens:
        telemetry = telemetry.model_copy(
            update={"energy_j_per_token": telemetry.energy_j_total / tokens}
        )
    if telemetry.available and telemetry.power_draw_w_total_mean and aggregate:
        telemetry = telemetry.model_copy(
            update={"tok_s_per_w": aggregate / telemetry.power_draw_w_total_mean}
        )
    return Cell(
        index=index,
        mode=mode,
        concurrency=concurrency,
        requests_planned=requests_planned,
        duration_s=duration_s,
        token_count_source=source,
        valid=not reasons,
        invalid_reasons=reasons,
        client_bound=bool(client and client.client_bound),
        cut_short=cut_short,
        metrics=metrics,
        client=client,
        telemetry=telemetry,
        requests=records,
    )
