"""What `rigbook capacity` prints: a line per probe as it ends, the probe table, the sentence."""

from __future__ import annotations

from rich import box
from rich.table import Table

from rigbook.capacity.answer import users
from rigbook.capacity.result import CapacityResult
from rigbook.capacity.search import ProbeOutcome
from rigbook.capacity.slo import KINDS


def _v(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "":
        return f"{100 * value:.0f}%"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def probe_line(o: ProbeOutcome) -> str:
    """'probe 3: 8 users (double) pass — per_user_tok_s 23.1 (n=24), ttft_p99_ms 840 (n=299)':
    each term's value and the requests it rests on."""
    terms = ", ".join(
        f"{r.term} {_v(r.value, KINDS[r.term].unit)}"
        + ("" if r.requests is None or r.term == "error_rate" else f" (n={r.requests})")
        + ("" if r.passed else " ✗")
        for r in o.readings
    )
    text = f"probe {o.cell + 1}: {users(o.concurrency)} ({o.purpose}) {o.verdict} — {terms}"
    if o.drain is not None and o.drain.waited_s >= 0.05:
        text += f"; waited {o.drain.waited_s:.1f} s for an idle server"
    if o.stopped_early:
        text += f"; stopped: {o.stopped_early}"
    if o.client_bound:
        text += "; client_bound"
    return text


_WHY = {"double": "×2", "bisect": "½", "check": "below", "rerun": "again"}


def probe_table(result: CapacityResult) -> Table:
    """One row per probe, with each term's value (✗ where it failed); ``*`` marks a client-bound
    probe, ``early`` one stopped when a term was broken beyond doubt."""
    names = [t.name for t in result.slo.terms]
    t = Table(
        title=f"capacity at {result.slo.text}",
        box=box.SIMPLE_HEAD,
        padding=(0, 0, 0, 1),
        pad_edge=False,
    )
    for col in ("#", "users", "step", "verdict", *names, "agg tok/s", "ok/fail"):
        t.add_column(
            col.replace("_", "_\n", 1) if col in names else col,
            justify="left" if col in ("step", "verdict") else "right",
            no_wrap=True,
        )
    for o in result.probes:
        cells = []
        for name in names:
            r = next(x for x in o.readings if x.term == name)
            cells.append(_v(r.value, KINDS[name].unit) + ("" if r.passed else " ✗"))
        verdict = (
            o.verdict + (" early" if o.stopped_early else "") + ("*" if o.client_bound else "")
        )
        t.add_row(
            str(o.cell + 1),
            str(o.concurrency),
            _WHY[o.purpose],
            verdict,
            *cells,
            _v(o.aggregate_tok_s, "tok/s"),
            f"{o.requests_ok}/{o.requests_failed}",
        )
    if any(o.client_bound for o in result.probes):
        t.caption = "* client-bound: the bench found the client late (see the warnings)"
    return t


def detail_lines(result: CapacityResult) -> list[str]:
    """The numbers behind the sentence: the aggregate there, the first failing level, the spread."""
    a = result.answer
    lines = []
    if a.users:
        per_gpu = (
            f", {a.aggregate_tok_s_per_gpu:.1f} per GPU"
            if a.aggregate_tok_s_per_gpu
            else " (no GPU)"
            if a.gpu_count == 0
            else ""
        )
        agg = "-" if a.aggregate_tok_s is None else f"{a.aggregate_tok_s:.1f}"
        lines.append(
            f"at {users(a.users)}: {agg} tok/s aggregate{per_gpu}, median of "
            f"{len(a.boundary_cells)} runs"
        )
    if a.first_fail_concurrency is not None:
        lines.append(f"first failing level: {users(a.first_fail_concurrency)}")
    for s in a.spread:
        if s.min is not None and s.term != "error_rate":
            unit = KINDS[s.term].unit
            pct = (
                " (one run: no spread)"
                if len([v for v in s.values if v is not None]) == 1
                else ""
                if s.spread_pct is None
                else f" (spread {s.spread_pct:.1f}%)"
            )
            lines.append(
                f"{s.term} over the boundary runs: {_v(s.min, unit)} to "
                f"{_v(s.max, unit)} {unit}{pct}"
            )
    return lines


def summary(result: CapacityResult, path: str) -> dict:
    """The JSON `rigbook capacity --json` prints."""
    return {
        "result": path,
        "probe_results": [o.result_file for o in result.probes],
        "sentence": result.answer.sentence,
        "slo": result.slo.text,
        "answer": result.answer.model_dump(mode="json"),
        "probes": [o.model_dump(mode="json") for o in result.probes],
        "perf_points": [p.model_dump(mode="json", exclude_none=True) for p in result.perf_points],
        "warnings": result.warnings,
        "load": result.load,
    }
