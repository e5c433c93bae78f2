"""How `needle` and `agree` print: a line per probe or question while running, a summary after."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from rigbook.quality.claims import label, score
from rigbook.quality.result import AgreeResult, NeedleProbe, NeedleResult, QuestionOutcome
from rigbook.recipe.schema import PerfPoint


def _num(value: float | None, fmt: str = ",.0f") -> str:
    return "—" if value is None else format(value, fmt)


def paired_stats(point: PerfPoint) -> str:
    """What a quality point says of its pairing, where it says it: ', agreement 95.0% with
    TP4, exact McNemar p=1' (empty when it states neither)."""
    q = point.quality
    if q is None:
        return ""
    parts = []
    if q.agreement_pct is not None:
        parts.append(f"agreement {q.agreement_pct:.1f}%")
    if q.mcnemar_p is not None:
        parts.append(f"exact McNemar p={q.mcnemar_p:.3g}")
    if not parts:
        return ""
    return ", " + ", ".join(parts) + (f" vs {q.reference}" if q.reference else "")


def claim_line(point: PerfPoint) -> str:
    """One quality point in words: what it measured, its score, its pairing, who claims it."""
    by = f" ({point.claimed_by})" if point.claimed_by else ""
    return f"{label(point)}: {score(point)}{paired_stats(point)}{by}"


def needle_line(p: NeedleProbe) -> str:
    """One probe as it finishes."""
    mark = "[green]pass[/]" if p.passed else "[red]FAIL[/]"
    if p.truncated:
        mark = "[yellow]CUT[/]"
    why = f" ({p.error})" if p.error else ""
    if p.truncated:
        why += f" (the server cut the prompt: at least {p.expected_prompt_tokens} tokens sent)"
    elif p.faults:
        why += f" ({', '.join(p.faults)})"
    return (
        f"{mark} context {p.context} depth {p.depth:g} {p.cache}: {_num(p.prompt_tokens)} prompt "
        f"tokens, TTFT {_num(p.ttft_ms)} ms, prefill {_num(p.prefill_tok_s)} tok/s{why}"
    )


def _cell(p: NeedleProbe | None) -> str:
    """Facts found, and why a probe failed: 'cut' for a truncated prompt, its faults."""
    if p is None:
        return "—"
    if p.truncated:
        return "[yellow]cut[/]"
    found = f"{sum(f.found for f in p.facts)}/{len(p.facts)}"
    if p.passed:
        return f"[green]{found}[/]"
    return f"[red]{found}{' ' + ','.join(p.faults) if p.faults else ''}[/]"


def render_needle(result: NeedleResult, path: Path, console: Console) -> None:
    """The depth × context grid of passes, the conditions and where the result is."""
    c = result.conditions
    table = Table(title="needle: facts retrieved (cold probes)")
    table.add_column("context")
    for d in c.depths:
        table.add_column(f"depth {d:g}")
    for ctx in c.contexts:
        cells = []
        for d in c.depths:
            p = next(
                (p for p in result.probes if (p.context, p.depth, p.cache) == (ctx, d, "cold")),
                None,
            )
            cells.append(_cell(p))
        table.add_row(str(ctx), *cells)
    console.print(table)
    console.print(
        f"model {c.endpoint.model} ({c.endpoint.engine or 'engine unknown'}), seed {c.seed}, "
        f"{c.facts} facts per probe, sized by {c.token_count_source}; "
        f"load {c.run.machine.load_start}→{c.run.machine.load_end} on {c.run.machine.cpus} CPUs"
    )
    console.print(f"result: {path}")


def agree_line(i: int, o: QuestionOutcome) -> str:
    """One question as it finishes."""

    def side(a) -> str:
        mark = "" if a.correct is None else (" ✓" if a.correct else " ✗")
        return (a.error and "error") or f"{a.letter or '-'}{mark}"

    same = "same" if o.a.letter == o.b.letter and not o.failed else "[yellow]differ[/]"
    return f"{i + 1:4d} {o.id}: gold {o.gold or '-'}  A {side(o.a)}  B {side(o.b)}  {same}"


def render_agree(result: AgreeResult, path: Path, console: Console) -> None:
    """Accuracy, agreement, McNemar and the differing questions."""
    s, c = result.summary, result.conditions
    console.print(f"suite {c.suite.name} {c.suite.version} ({c.suite.selection}), {c.extraction}")
    if c.suite.note:
        console.print(f"[yellow]note: {c.suite.note}[/]", highlight=False)
    if s is None:
        console.print(f"no question answered; result: {path}")
        return
    for letter, side, ok, acc, none in (
        ("A", c.a, s.a_correct, s.a_accuracy_pct, s.a_no_answer),
        ("B", c.b, s.b_correct, s.b_accuracy_pct, s.b_no_answer),
    ):
        score = f"{ok}/{s.counted} right ({acc}%)" if ok is not None else "no gold answers"
        console.print(f"{letter} {side.model} at {side.url}: {score}, {none} without an answer")
    console.print(
        f"agreement {s.agree}/{s.counted} ({s.agreement_pct}%)"
        + (
            f"; exact McNemar p = {s.mcnemar_p:.4g} (A only right {s.only_a_correct}, "
            f"B only right {s.only_b_correct})"
            if s.mcnemar_p is not None
            else ""
        )
    )
    if s.failed:
        console.print(f"[yellow]{s.failed} question(s) left out: a request failed[/]")
    if s.differing:
        console.print(
            "differ: " + ", ".join(s.differing[:40]) + (" …" if len(s.differing) > 40 else "")
        )
    console.print(f"result: {path}")
