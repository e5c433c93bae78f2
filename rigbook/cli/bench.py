"""`rigbook bench` and `rigbook report`: thin wrappers over rigbook.bench."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

import typer

from rigbook.cli.output import JsonOption, console, emit, err_console, handled
from rigbook.errors import InputError, RigbookError


def _levels(text: str | None) -> list[int] | None:
    if text is None:
        return None
    from rigbook.bench.scheduler import MAX_CONCURRENCY

    try:
        levels = [int(x) for x in text.split(",")]
    except ValueError:
        levels = []
    if not levels or any(c < 1 for c in levels):
        raise InputError("E_INPUT", f"--concurrency {text!r} is not a list of positive integers", "Write e.g. --concurrency 1,4,8.")
    if max(levels) > MAX_CONCURRENCY:
        raise InputError("E_INPUT", f"--concurrency {max(levels)} is more streams than one bench process holds "
                         f"(at most {MAX_CONCURRENCY})",
                         "Use fewer; `make bench-client` shows where this machine's client becomes the bottleneck.")
    return levels


def _recipe(ref: str | None) -> dict:
    """What the named recipe says about the run: its revision, engine and the conditions it states (quant)."""
    if ref is None:
        return {}
    from rigbook.recipe.resolve import resolve_recipe

    recipe = resolve_recipe(ref)
    extra = {}
    quant = next((m.quant for m in recipe.models if m.quant), None)
    if quant:
        extra["quant"] = quant
    source = recipe.engine_source
    return {"recipe_revision": recipe.revision.no if recipe.revision else None, "extra": extra,
            "recipe_engine": recipe.engine, "recipe_engine_version": source.base_version if source else None}


def register(app: typer.Typer) -> None:
    """Add `bench` and `report` to the main app."""

    @app.command("bench")
    def bench(
        url: str = typer.Argument(..., help="Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000"),
        model: str = typer.Option(None, "--model", help="Model id (default: the first the server lists)."),
        profile: str = typer.Option("seed", "--profile", help="Bench profile: seed (default) or quick."),
        concurrency: str = typer.Option(None, "--concurrency", help="Concurrency levels, e.g. 1,4,8 (default: the profile's)."),
        max_tokens: int = typer.Option(None, "--max-tokens", min=1, help="Reply length (default: the profile's)."),
        requests: int = typer.Option(None, "--requests", min=1, help="Burst mode: requests per level."),
        duration: float = typer.Option(None, "--duration", min=0.1, help="Sustained mode: seconds per level."),
        warmup: int = typer.Option(None, "--warmup", min=0, help="Warmup requests before measuring."),
        stall_timeout: float = typer.Option(None, "--stall-timeout", min=0.1, help="Seconds of silence that fail a request."),
        recipe: str = typer.Option(None, "--recipe", help="Recipe slug (or file) the server runs; recorded with the result."),
        out: Path = typer.Option(None, "--out", help="Result file (default: RIGBOOK_HOME/results/<timestamp>.json)."),
        as_json: bool = JsonOption,
    ) -> None:
        """Measure an endpoint the way published numbers were measured; writes a result file."""
        with handled(as_json):
            from rigbook.endpoint.local import is_local
            from rigbook.bench.profiles import get_profile
            from rigbook.endpoint.url import base_url
            from rigbook.bench.progress import LiveProgress, render_result
            from rigbook.bench.runner import BenchSpec, run_bench
            from rigbook.bench.telemetry import Sampler, open_reader
            from rigbook.home import state_dir
            from rigbook.rig.probe import probe_rig

            if requests is not None and duration is not None:
                raise InputError("E_INPUT", "--requests and --duration exclude each other",
                                 "Use --requests N for burst mode or --duration S for sustained mode.")
            prof = get_profile(profile)
            target = out or state_dir("results") / f"bench-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
            spec = BenchSpec(url=base_url(url), model=model, profile=prof, concurrency=_levels(concurrency), max_tokens=max_tokens,
                             requests=requests, duration_s=duration, warmup=warmup, stall_timeout_s=stall_timeout,
                             recipe_slug=recipe, out=target, **_recipe(recipe))
            if is_local(spec.url):
                try:
                    rig, rig_why = probe_rig().summary(), None
                except Exception as exc:  # noqa: BLE001 - a failed probe must not stop a bench; it is recorded
                    rig, rig_why = None, f"{type(exc).__name__}: {exc}"
                reader, why = open_reader()
            else:
                why = f"the endpoint is on another host ({spec.url}): this machine's GPUs say nothing about it"
                rig, rig_why, reader = None, why, None
            live = LiveProgress(enabled=not as_json)
            with live:
                result = asyncio.run(run_bench(spec, rig=rig, rig_unavailable=rig_why, sampler=Sampler(reader, why),
                                               progress=live.update))
            summary = {"result": str(target), "journal": str(target.with_name(result.journal)), "cut_short": result.conditions.cut_short,
                       "warnings": result.warnings, "cells": [c.model_dump(mode="json", exclude={"requests"}) for c in result.cells],
                       "perf_points": [p.model_dump(mode="json") for p in result.perf_points]}
            invalid = [c for c in result.cells if not c.valid and not c.cut_short]
            error = None
            if invalid:
                error = RigbookError("E_BENCH_INVALID", f"{len(invalid)} of {len(result.cells)} cells had failed requests "
                                     f"(result written to {target})",
                                     details=[f"cell {c.index} (concurrency {c.concurrency}): {r}" for c in invalid for r in c.invalid_reasons])
                summary["error"] = error.to_dict()
            emit(summary, as_json, lambda: render_result(result, target))
            if error and as_json:  # one JSON document on stdout: the error is inside the summary
                raise typer.Exit(error.exit_code)
            if error:
                raise error

    @app.command("report")
    def report(
        result: Path = typer.Argument(..., help="A result file, or a *.journal.jsonl of a run that was killed."),
        fmt: str = typer.Option("md", "--format", help="md or html."),
        out: Path = typer.Option(None, "--out", help="Directory for the report and plots (default: beside the result)."),
        as_json: bool = JsonOption,
    ) -> None:
        """Write plots (PNG) and a Markdown or HTML report for a result."""
        with handled(as_json):
            from rigbook.bench.journal import rebuild
            from rigbook.bench.report import write_report
            from rigbook.bench.result import load_result, save_result

            if fmt not in ("md", "html"):
                raise InputError("E_INPUT", f"--format {fmt!r} is not md or html")
            if result.name.endswith(".journal.jsonl"):
                res = rebuild(result)
                rebuilt = result.with_name(result.name.removesuffix(".journal.jsonl") + ".rebuilt.json")
                save_result(res, rebuilt)
            else:
                res, rebuilt = load_result(result), None
            target = out or result.parent / (result.name.split(".")[0] + "-report")
            written = write_report(res, target, fmt)
            value = {"report": str(written.report), "plots": [str(p) for p in written.plots],
                     "rebuilt_result": str(rebuilt) if rebuilt else None}

            def render() -> None:
                if rebuilt:
                    err_console.print(f"[yellow]warning[W_CUT_SHORT][/]: rebuilt from the journal; wrote {rebuilt}")
                console.print(f"report: {written.report}")
                for p in written.plots:
                    console.print(f"plot:   {p}")

            emit(value, as_json, render)
