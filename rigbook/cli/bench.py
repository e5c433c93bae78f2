"""`rigbook bench` and `rigbook report`: thin wrappers over rigbook.bench."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from rigbook.cli import bench_options as opt
from rigbook.cli.output import JsonOption, console, emit, err_console, handled
from rigbook.errors import InputError


class _Stop(threading.Event):
    """The stop event a signal sets, remembering which signal it was (the exit status is 128 + it)."""

    signum: int | None = None

    def on_signal(self, signum: int, _frame: object) -> None:
        self.signum = signum
        self.set()


@contextmanager
def _stop_on_signals() -> Iterator[_Stop]:
    """SIGINT and SIGTERM set the event the bench watches, instead of killing the process."""
    stop = _Stop()
    before = {sig: signal.signal(sig, stop.on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def register(app: typer.Typer) -> None:
    """Add `bench` and `report` to the main app."""

    @app.command("bench")
    @opt.bench_options()
    def bench(
        url: str = typer.Argument(
            ...,
            help="Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000",
        ),
        *,
        options: opt.BenchOptions,  # every bench option, from MeasureRequest's fields
        as_json: bool = JsonOption,
    ) -> None:
        """Measure an endpoint the way published numbers were measured; writes a result file."""
        with handled(as_json):
            from rigbook.bench.measure import MeasureRequest, measure
            from rigbook.bench.progress import LiveProgress, render_result
            from rigbook.bench.repeats import interval_lines
            from rigbook.bench.workloads.trace import replay_lines

            request = options.request(MeasureRequest, url=url)
            live = LiveProgress(enabled=not as_json)
            with live, _stop_on_signals() as stop:
                done = measure(request, stop, progress=live.update)
            result = done.result
            top = done.client_ceiling
            summary = {
                "result": str(done.result_path),
                "journal": str(done.journal_path),
                "cut_short": result.conditions.cut_short,
                "warnings": result.warnings,
                "cells": [c.model_dump(mode="json", exclude={"requests"}) for c in result.cells],
                "perf_points": [p.model_dump(mode="json") for p in result.perf_points],
                "intervals": [i.model_dump(mode="json") for i in result.intervals],
                "client_ceiling": top.model_dump(mode="json") if top else None,
            }
            if done.verdict:
                summary["error"] = done.verdict.error().to_dict()

            def render() -> None:
                for line in interval_lines(result):
                    err_console.print(f"interval: {line}", markup=False, highlight=False)
                for line in replay_lines(result.cells):
                    err_console.print(f"trace: {line}", markup=False, highlight=False)
                render_result(result, done.result_path, top)

            emit(summary, as_json, render)
            if done.verdict and as_json:  # one JSON document on stdout: the error is inside it
                raise typer.Exit(done.verdict.error().exit_code)
            if done.verdict:
                raise done.verdict.error()
            if (
                stop.signum is not None
            ):  # cut short: what was measured is written, but the run is not whole
                raise typer.Exit(128 + stop.signum)

    @app.command("report")
    def report(
        result: Path = typer.Argument(
            ...,
            help="A bench, capacity, needle or agree result file, or a *.journal.jsonl of a killed "
            "bench run.",
        ),
        fmt: str = typer.Option("md", "--format", help="md or html."),
        out: Path = typer.Option(
            None,
            "--out",
            help="Directory for the report and plots (default: beside the result).",
        ),
        as_json: bool = JsonOption,
    ) -> None:
        """Write plots (PNG) and a Markdown or HTML report for a result (needle: the depth × context grid)."""
        with handled(as_json):
            from rigbook.bench.journal import rebuild
            from rigbook.bench.report import write_report
            from rigbook.bench.result import BenchResult, save_result
            from rigbook.capacity.chart import write_capacity_report
            from rigbook.capacity.result import CapacityResult
            from rigbook.quality.report import write_quality_report
            from rigbook.results import load_result, measured

            if fmt not in ("md", "html"):
                raise InputError("E_INPUT", f"--format {fmt!r} is not md or html")
            target = out or result.parent / (result.name.split(".")[0] + "-report")
            rebuilt = None
            if result.name.endswith(".journal.jsonl"):
                res = rebuild(result)
                rebuilt = result.with_name(
                    result.name.removesuffix(".journal.jsonl") + ".rebuilt.json"
                )
                save_result(res, rebuilt)
                written = write_report(res, target, fmt)
            elif isinstance(loaded := measured(load_result(result)), BenchResult):
                written = write_report(loaded, target, fmt)
            elif isinstance(loaded, CapacityResult):
                # the capacity curve with its SLO lines, and the probes' bench report
                written = write_capacity_report(loaded, target, fmt)
            else:
                written = write_quality_report(loaded, target, fmt)
            value = {
                "report": str(written.report),
                "plots": [str(p) for p in written.plots],
                "rebuilt_result": str(rebuilt) if rebuilt else None,
            }

            def render() -> None:
                if rebuilt:
                    err_console.print(
                        f"[yellow]warning[W_CUT_SHORT][/]: rebuilt from the journal; wrote {rebuilt}"
                    )
                console.print(f"report: {written.report}")
                for p in written.plots:
                    console.print(f"plot:   {p}")

            emit(value, as_json, render)
