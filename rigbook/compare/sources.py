"""Turn a `rigbook compare` argument into a Source: perf points whose conditions are fully resolved.

A recipe's point takes what its own ``conditions`` say and, for anything left
null, the recipe-level facts (hardware, engine, model quant, ``rigbook`` block).
A bench result's point takes its own ``conditions`` and, for anything left null,
the run's conditions, profile and telemetry. A point that ran on no GPU (GPU count 0)
has the CPU as its card. Nothing else is guessed: what no source says stays null and
the rules count it as unknown.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, TypeVar

from rigbook.bench.result import BenchResult
from rigbook.bench.workloads.model import workload_of
from rigbook.capacity.result import CapacityResult
from rigbook.comparison import ComparedConditions, ComparedPoint, QualityPoint, Source
from rigbook.errors import InputError, RigbookError
from rigbook.quality import result as quality_result
from rigbook.quality.claims import needle_claim, recipe_quality
from rigbook.recipe.load import parse_recipe
from rigbook.recipe.resolve import resolve_recipe
from rigbook.recipe.schema import PerfPoint, Recipe, Sampling
from rigbook.recipe.speculator import speculator
from rigbook.result_file import read_file
from rigbook.results import Measured, is_result, measured, validate

CPU = "CPU"
# `rigbook bench` starts every perf point's notes so ("rigbook burst, profile seed v1, …"); a recipe
# that published such a point states its mode there and nowhere else.
BENCH_NOTES = re.compile(r"^rigbook (burst|sustained)\b")


def _noted_mode(point: PerfPoint) -> str | None:
    """The bench mode a point's own notes state, when rigbook wrote them."""
    found = BENCH_NOTES.match(point.notes or "")
    return found.group(1) if found else None


_Point = TypeVar("_Point", bound=QualityPoint)


def _fill(point: PerfPoint, defaults: dict, as_type: type[_Point], cpu: str = CPU) -> _Point:
    """The point with every null condition taken from ``defaults`` (non-null values only).

    A point with no GPU gets ``cpu`` as its card, so a reason says "NVIDIA H200 vs CPU" rather
    than leaving the card unknown: the CPU is what ran it."""
    own = point.conditions.model_dump(exclude_none=True) if point.conditions else {}
    noted = {"bench_mode": _noted_mode(point)}
    merged = {k: v for k, v in (defaults | noted).items() if v is not None} | own
    conditions = ComparedConditions.model_validate(merged)
    if conditions.gpu_count == 0 and conditions.card is None:
        conditions.card = cpu
    return as_type.model_validate(
        point.model_dump(exclude={"conditions"}) | {"conditions": conditions}
    )


def _usable(points: list[PerfPoint]) -> tuple[list[PerfPoint], list[str]]:
    """Points that can be lined up (a concurrency and a number), and a note for each one left out.

    Quality points (and claims read from a point's notes) are not speed points: they are read
    by :func:`rigbook.quality.claims.recipe_quality` and compared on their own."""
    kept, skipped = [], []
    for p in points:
        label = p.notes or (f"point {p.id}" if p.id is not None else "a point")
        if p.quality is not None or needle_claim(p) is not None:
            continue
        if p.decode_tok_s is None and p.prefill_tok_s is None and p.ttft_ms is None:
            skipped.append(f"{label}: no decode, prefill or TTFT number")
        elif p.concurrency is None:
            skipped.append(f"{label}: no concurrency, so it cannot be lined up")
        else:
            kept.append(p)
    return kept, skipped


def recipe_defaults(recipe: Recipe) -> dict:
    """The conditions a recipe states once for all its points."""
    ext = recipe.ext
    cards = {h.card for h in recipe.hardware}
    return {
        "gpu_count": recipe.gpu_count,  # 0 for a recipe with no GPU hardware (the CPU default)
        "card": cards.pop() if len(cards) == 1 else None,
        "power_limit_w_per_gpu": ext.power_limit_w_per_gpu,
        "engine": recipe.engine,
        "engine_version": ext.engine_version
        or (recipe.engine_source.base_version if recipe.engine_source else None),
        "quant": recipe.models[0].quant if len(recipe.models) == 1 else None,
        "kv_cache_dtype": ext.kv_cache_dtype,
        "speculative_method": drafter.method if (drafter := speculator(recipe)) else None,
    }


def source_from_recipe(ref: str, recipe: Recipe) -> Source:
    """A recipe's perf points with recipe-level conditions filled in."""
    defaults = recipe_defaults(recipe)
    kept, skipped = _usable(recipe.perf_points)
    return Source(
        ref=ref,
        kind="recipe",
        name=recipe.slug,
        model=recipe.models[0].slug if recipe.models else None,
        points=[_fill(p, defaults, ComparedPoint) for p in kept],
        skipped=skipped,
        quality=[_fill(p, defaults, QualityPoint) for p in recipe_quality(recipe)],
    )


def source_from_quality(ref: str, result: quality_result.QualityResult) -> Source:
    """A needle or agree result's quality points, with the endpoint's engine."""
    if isinstance(result, quality_result.NeedleResult):
        endpoint = result.conditions.endpoint
    else:
        endpoint = result.conditions.a
    defaults = {"engine": endpoint.engine, "engine_version": endpoint.engine_version}
    return Source(
        ref=ref,
        kind="quality_result",
        name=Path(ref).name,
        model=endpoint.model,
        points=[],
        content_hash=result.content_hash,
        quality=[_fill(p, defaults, QualityPoint) for p in result.quality_points],
    )


def _run_defaults(result: BenchResult) -> dict:
    """The conditions a bench run states once: engine, tool, profile, cards and their limits."""
    c = result.conditions
    limits = {w for w in result.telemetry.power_limit_w_per_gpu if w is not None}
    names = {g.name for g in result.telemetry.gpus if g.name}
    return {
        "bench_mode": c.mode,
        "bench_profile": f"{c.profile.name} v{c.profile.version}",
        "bench_profile_hash": c.profile.content_hash,
        "engine": c.engine,
        "engine_version": c.engine_version,
        "bench_tool": c.bench_tool,
        "bench_tool_version": c.rigbook_version if c.bench_tool == "rigbook" else None,
        # Every rigbook bench wrote its aggregate, TTFT included, as decode_tok_s (results written
        # before the field existed say nothing, but their notes and code say this).
        "rate_definition": "aggregate_with_ttft" if c.bench_tool == "rigbook" else None,
        "sampling": Sampling(temperature=c.profile.temperature, top_p=c.profile.top_p).model_dump(
            exclude_none=True
        ),
        "reply_tokens": c.profile.max_tokens,
        "reply_length_held": c.profile.reply_length_held,
        "thinking": c.profile.thinking,
        # A prose run's content class is the profile's; a session workload is its own.
        "workload": c.profile.workload
        if workload_of(c.workload).kind == "prose"
        else workload_of(c.workload).name,
        "gpu_count": len(result.telemetry.gpus)
        if result.telemetry.available and result.telemetry.gpus
        else None,
        "card": names.pop() if len(names) == 1 else None,
        # A single enforced limit shared by every card; mixed limits stay unknown rather than averaged.
        "power_limit_w_per_gpu": limits.pop()
        if len(limits) == 1 and None not in result.telemetry.power_limit_w_per_gpu
        else None,
    }


def _cpu(result: BenchResult) -> str:
    """The card of a point that ran on no GPU: the rig summary's CPU model, else just 'CPU'."""
    model = result.conditions.rig.cpu if result.conditions.rig else None
    return f"{CPU} ({model})" if model else CPU


def _cell_defaults(result: BenchResult, point: PerfPoint) -> dict:
    """What the matching valid cell adds: its token-count source, its measured energy per token
    and its drafter's mean acceptance length (the engine's counters)."""
    mode = _noted_mode(point) or result.conditions.mode
    cell = next(
        (
            c
            for c in result.cells
            if c.valid and c.concurrency == point.concurrency and c.mode == mode
        ),
        None,
    )
    if cell is None:
        return {}
    return {
        "token_count_source": cell.token_count_source,
        "energy_j_per_token": cell.telemetry.energy_j_per_token
        if cell.telemetry.available
        else None,
        "speculative_acceptance_length": cell.speculation.mean_acceptance_length
        if cell.speculation
        else None,
    }


def _measured_source(
    ref: str,
    kind: Literal["bench_result", "capacity"],
    bench: BenchResult,
    perf_points: list[PerfPoint],
    content_hash: str | None,
    note: str | None = None,
) -> Source:
    """Perf points of a run (a bench result, or the bench a capacity search ran) with its
    conditions filled in; ``note`` joins what was skipped."""
    run = _run_defaults(bench)
    kept, skipped = _usable(perf_points)
    points = [
        _fill(
            p,
            run | {k: v for k, v in _cell_defaults(bench, p).items() if v is not None},
            ComparedPoint,
            _cpu(bench),
        )
        for p in kept
    ]
    if note:
        skipped.append(note)
    return Source(
        ref=ref,
        kind=kind,
        name=Path(ref).name,
        model=bench.conditions.model,
        content_hash=content_hash,
        workload=workload_of(bench.conditions.workload).key(),
        points=points,
        skipped=skipped,
    )


def source_from_result(ref: str, result: BenchResult) -> Source:
    """A bench result's perf points with the run's conditions filled in."""
    return _measured_source(ref, "bench_result", result, result.perf_points, result.content_hash)


def source_from_capacity(ref: str, result: CapacityResult) -> Source:
    """A capacity result's users_at_slo point with the run's conditions filled in, as for a bench result."""
    note = (
        None if result.perf_points else f"no users at {result.slo.text}: {result.answer.sentence}"
    )
    return _measured_source(
        ref, "capacity", result.bench, result.perf_points, result.content_hash, note
    )


def source_from_loaded(ref: str, result: Measured) -> Source:
    """The source a loaded result file gives, by its kind."""
    if isinstance(result, BenchResult):
        return source_from_result(ref, result)
    if isinstance(result, CapacityResult):
        return source_from_capacity(ref, result)
    return source_from_quality(ref, result)


def _neither(ref: str, exc: RigbookError) -> InputError:
    """A file that is no recipe may be a result cut short or edited: say both what it is not."""
    return InputError(
        "E_RESULT_INVALID",
        f"{ref} is neither a bench result nor a recipe: {exc.message}",
        "Give a result file written by `rigbook bench` (a killed run's *.journal.jsonl "
        "rebuilds with `rigbook report`), a recipe file, or a catalog slug.",
        details=exc.details,
    )


def _source_from_file(ref: str, path: Path) -> Source:
    """A result file (hash checked) or a recipe file, read once: its ``kind`` tells which."""
    try:
        file = read_file(path)
    except RigbookError as exc:
        raise _neither(ref, exc) from None
    if is_result(file):  # a comparison or a reproduction is refused, named
        return source_from_loaded(ref, measured(validate(file)))
    try:
        recipe = parse_recipe(file.data, ref)
    except RigbookError as exc:
        # a JSON object with a slug is a recipe with mistakes in it, to be reported as one
        if exc.code != "E_RECIPE_INVALID" or (isinstance(file.data, dict) and "slug" in file.data):
            raise
        raise _neither(ref, exc) from None
    return source_from_recipe(ref, recipe)


def load_source(ref: str, *, points: bool = True) -> Source:
    """Resolve one argument: a result file (bench, capacity, needle or agree; hash checked), a
    recipe file or URL, or a catalog slug. ``points``: refuse a source with nothing to compare
    (:func:`require_points`)."""
    path = Path(ref).expanduser()
    if path.is_file():
        source = _source_from_file(ref, path)
    else:
        source = source_from_recipe(ref, resolve_recipe(ref))
    return require_points(source) if points else source


def require_points(source: Source) -> Source:
    """The source, if it has a perf point or a quality point to compare; else ``E_INPUT``."""
    if not source.points and not source.quality:
        raise InputError(
            "E_INPUT",
            f"{source.ref} has no perf point with a concurrency and a number to compare",
            "Measure it with `rigbook bench`, or pick a recipe with published numbers.",
            details=source.skipped,
        )
    return source
