"""`rigbook capacity`: a thin wrapper over rigbook.capacity."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import typer

from rigbook.cli import bench_options as opt
from rigbook.cli.output import JsonOption, console, emit, err_console, handled
from rigbook.errors import InputError


def register(app: typer.Typer) -> None:
    """Add `capacity` to the main app."""

    @app.command("capacity")
    @opt.bench_options(
        [
            "profile",
            "model",
            "workload",
            "dataset_size",
            "seed",
            "min_prompt_chars",
            "max_prompt_chars",
            "stall_timeout_s",
            "client",
            "max_tokens",
            "warmup",
        ],
        helps={
            "workload": opt.workload_help(
                "What each probe's requests are, as for `rigbook bench`",
                "a probe of N users is N sessions. A trace sets its own load, so it cannot be "
                "searched",
            ),
            "stall_timeout_s": "Seconds of silence that fail a request (default: the "
            "profile's); raised to twice the SLO's TTFT bound.",
            "warmup": "Warmup requests before the first probe.",
        },
    )
    def capacity(
        url: str = typer.Argument(
            None, help="Base URL of an OpenAI-compatible server (or --recipe)."
        ),
        slo: str = typer.Option(
            ..., "--slo", help='Terms, e.g. "per_user_tok_s>=20,ttft_p99_ms<=2000".'
        ),
        *,
        options: opt.BenchOptions,  # the bench options a probe takes, from MeasureRequest
        max_concurrency: int = typer.Option(
            256, "--max-concurrency", min=1, max=4096, help="Never probe more users than this."
        ),
        rounds: int = typer.Option(
            3, "--rounds", min=1, help="Requests each user sends per probe."
        ),
        min_requests: int = typer.Option(
            8, "--min-requests", min=1, help="Fewest requests in any probe (low levels)."
        ),
        reruns: int = typer.Option(2, "--reruns", min=0, help="Extra runs of the boundary level."),
        max_requests: int = typer.Option(
            None,
            "--max-requests",
            min=1,
            help="Cap on the requests a probe sends for a tail term's rule (299 for p99); a term "
            "judged on fewer says which tail it could miss.",
        ),
        checks: int = typer.Option(
            8, "--checks", min=0, help="Most levels below the answer, never run, to check."
        ),
        drain: float = typer.Option(
            2.0,
            "--drain",
            min=0,
            help="Seconds to wait after a probe stopped early when the server has no in-flight "
            "counter.",
        ),
        drain_timeout: float = typer.Option(
            60.0,
            "--drain-timeout",
            min=0,
            help="Longest wait for the server's counters to show no request in flight.",
        ),
        recipe: str = typer.Option(
            None, "--recipe", help="Recipe slug: started if not running, stopped after."
        ),
        port: str = typer.Option(
            None, "--port", help="With --recipe: the port to start it on (default: the recipe's)."
        ),
        models_dir: Path = typer.Option(
            None,
            "--models-dir",
            help="With --recipe: where its weights are (default: RIGBOOK_HOME/models).",
        ),
        out: Path = typer.Option(
            None, "--out", help="Result file (default: RIGBOOK_HOME/results/capacity-<time>.json)."
        ),
        as_json: bool = JsonOption,
    ) -> None:
        """How many users the server holds at an SLO: a search of bench cells, one sentence."""
        with handled(as_json):
            from rigbook.bench import MeasureRequest
            from rigbook.bench.progress import LiveProgress, warning_markup
            from rigbook.bench.workloads.sources import searchable
            from rigbook.capacity import CapacitySpec, SearchSettings, capacity, parse_slo
            from rigbook.capacity.present import detail_lines, probe_line, probe_table, summary
            from rigbook.capacity.serve import serving
            from rigbook.cli.bench import _stop_on_signals
            from rigbook.home import state_dir
            from rigbook.ports import parse_port

            terms = parse_slo(slo)
            searchable(options.values["workload"], "capacity")
            if url is None and recipe is None:
                raise InputError(
                    "E_INPUT",
                    "give the server's URL or --recipe SLUG",
                    "e.g. rigbook capacity http://127.0.0.1:8080 --slo per_user_tok_s>=20",
                )
            target = out or state_dir("results") / f"capacity-{datetime.now():%Y%m%d-%H%M%S}.json"
            settings = SearchSettings(
                max_concurrency=max_concurrency,
                rounds=rounds,
                min_requests=min_requests,
                reruns=reruns,
                max_requests=max_requests,
                checks=checks,
                drain_s=drain,
                drain_timeout_s=drain_timeout,
            )
            say = None if as_json else (lambda line: err_console.print(line, highlight=False))
            live = LiveProgress(enabled=not as_json)
            with serving(
                url, recipe, note=say, port=parse_port(port), models_dir=models_dir
            ) as served:
                # The capacity result is --out; each probe's bench result goes where it says.
                request = options.request(
                    MeasureRequest, url=served.url, recipe=served.recipe, out=None
                )
                spec = CapacitySpec(measure=request, slo=terms, settings=settings, out=target)
                with live, _stop_on_signals() as stop:
                    result = capacity(
                        spec,
                        stop,
                        progress=live.update,
                        on_probe=say and (lambda o: say(probe_line(o))),
                    )
            if result is None:  # stopped before the first probe measured anything: no file
                raise typer.Exit(128 + (stop.signum or 2))

            def render() -> None:
                err_console.print(probe_table(result))
                for w in result.warnings:
                    err_console.print(warning_markup(w), highlight=False)
                for line in detail_lines(result):
                    err_console.print(line, highlight=False)
                console.print(result.answer.sentence, highlight=False, soft_wrap=True)
                console.print(f"result: {target}", highlight=False, soft_wrap=True)

            emit(summary(result, str(target)), as_json, render)
            if stop.signum is not None:  # cut short: what was measured is written, not the whole
                raise typer.Exit(128 + stop.signum)
