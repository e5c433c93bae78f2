"""`rigbook capacity`: a thin wrapper over rigbook.capacity."""

from __future__ import annotations

import asyncio
import signal
from datetime import datetime
from pathlib import Path

import typer

from rigbook.cli.output import JsonOption, console, emit, err_console, handled
from rigbook.errors import InputError


async def _with_signals(run) -> object:
    """Run ``run(stop)`` with SIGINT/SIGTERM setting ``stop`` (what was measured is kept)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        return await run(stop)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


def register(app: typer.Typer) -> None:
    """Add `capacity` to the main app."""

    @app.command("capacity")
    def capacity(
        url: str = typer.Argument(
            None, help="Base URL of an OpenAI-compatible server (or --recipe)."
        ),
        slo: str = typer.Option(
            ..., "--slo", help='Terms, e.g. "per_user_tok_s>=20,ttft_p99_ms<=2000".'
        ),
        profile: str = typer.Option(
            "seed", "--profile", help="Bench profile: seed (default) or quick."
        ),
        model: str = typer.Option(None, "--model", help="Model id (default: the first served)."),
        max_concurrency: int = typer.Option(
            256, "--max-concurrency", min=1, max=4096, help="Never probe more users than this."
        ),
        rounds: int = typer.Option(
            3, "--rounds", min=1, help="Requests each user sends per probe."
        ),
        reruns: int = typer.Option(2, "--reruns", min=0, help="Extra runs of the boundary level."),
        max_tokens: int = typer.Option(
            None, "--max-tokens", min=1, help="Reply length (default: the profile's)."
        ),
        warmup: int = typer.Option(
            None, "--warmup", min=0, help="Warmup requests before the first probe."
        ),
        recipe: str = typer.Option(
            None, "--recipe", help="Recipe slug: started if not running, stopped after."
        ),
        out: Path = typer.Option(
            None, "--out", help="Result file (default: RIGBOOK_HOME/results/capacity-<time>.json)."
        ),
        as_json: bool = JsonOption,
    ) -> None:
        """How many users the server holds at an SLO: a search of bench cells, one sentence."""
        with handled(as_json):
            from rigbook.bench.profiles import get_profile
            from rigbook.bench.progress import LiveProgress
            from rigbook.bench.runner import BenchSpec
            from rigbook.capacity import CapacitySpec, SearchSettings, parse_slo, run_capacity
            from rigbook.capacity.present import detail_lines, probe_line, probe_table, summary
            from rigbook.capacity.serve import serving
            from rigbook.home import state_dir

            terms = parse_slo(slo)
            if url is None and recipe is None:
                raise InputError(
                    "E_INPUT",
                    "give the server's URL or --recipe SLUG",
                    "e.g. rigbook capacity http://127.0.0.1:8080 --slo per_user_tok_s>=20",
                )
            target = out or state_dir("results") / f"capacity-{datetime.now():%Y%m%d-%H%M%S}.json"
            settings = SearchSettings(max_concurrency=max_concurrency, rounds=rounds, reruns=reruns)
            live = LiveProgress(enabled=not as_json)
            with serving(url, recipe, note=None if as_json else err_console.print) as target_server:
                spec = CapacitySpec(
                    slo=terms,
                    settings=settings,
                    bench=BenchSpec(
                        url=target_server.url,
                        model=model,
                        profile=get_profile(profile),
                        max_tokens=max_tokens,
                        warmup=warmup,
                        recipe_slug=target_server.recipe_slug,
                        out=target,
                        **target_server.recipe_facts,
                    ),
                )
                rig, rig_why, sampler = target_server.machine()
                with live:
                    result = asyncio.run(
                        _with_signals(
                            lambda stop: run_capacity(
                                spec,
                                rig=rig,
                                rig_unavailable=rig_why,
                                sampler=sampler,
                                stop=stop,
                                progress=live.update,
                                on_probe=None
                                if as_json
                                else lambda o: err_console.print(probe_line(o), highlight=False),
                            )
                        )
                    )

            def render() -> None:
                err_console.print(probe_table(result))
                for w in result.warnings:
                    code, _, text = w.partition(":")
                    err_console.print(f"[yellow]warning[{code}][/]:{text}", highlight=False)
                for line in detail_lines(result):
                    err_console.print(line, highlight=False)
                console.print(result.answer.sentence, highlight=False, soft_wrap=True)
                console.print(f"result: {target}", highlight=False, soft_wrap=True)

            emit(summary(result, str(target)), as_json, render)
