"""`rigbook needle`: salted-needle retrieval at long context (thin: parse, run, print)."""

from __future__ import annotations

import asyncio
import secrets
from datetime import datetime
from pathlib import Path

import typer

from rigbook.cli.output import JsonOption, console, emit, handled
from rigbook.errors import InputError


def _contexts(text: str) -> list[int | None]:
    try:
        found = [None if x.strip() == "max" else int(x) for x in text.split(",")]
    except ValueError:
        found = []
    if not found or any(c is not None and c < 1 for c in found):
        raise InputError(
            "E_INPUT",
            f"--context {text!r} is not a list of token counts or 'max'",
            "Write e.g. --context max or --context 1024,2048.",
        )
    return found


def _depths(text: str) -> list[float]:
    try:
        found = [float(x) for x in text.split(",")]
    except ValueError:
        found = []
    if not found or any(not 0 <= d <= 1 for d in found):
        raise InputError(
            "E_INPUT",
            f"--depths {text!r} is not a list of fractions from 0 to 1",
            "Write e.g. --depths 0,0.25,0.5,0.75,1 (0 = start of the prompt).",
        )
    return found


def register(app: typer.Typer) -> None:
    """Add `needle` to the main app."""

    @app.command("needle")
    def needle(
        url: str = typer.Argument(..., help="Base URL of an OpenAI-compatible server."),
        context: str = typer.Option(
            "max", "--context", help="Context length(s) to fill: N, N,M or max."
        ),
        depths: str = typer.Option(
            "0,0.25,0.5,0.75,1", "--depths", help="Where the facts hide, 0-1."
        ),
        facts: int = typer.Option(2, "--facts", min=1, max=10, help="Salted facts per probe."),
        seed: int = typer.Option(None, "--seed", help="Salt seed (default: random, recorded)."),
        warm: bool = typer.Option(
            False, "--warm", help="Send each probe again (prefix cache warm)."
        ),
        model: str = typer.Option(None, "--model", help="Model id (default: the first listed)."),
        recipe: str = typer.Option(
            None,
            "--recipe",
            help="Recipe the server runs (recorded; its "
            "context length serves --context max when the server is silent).",
        ),
        out: Path = typer.Option(
            None, "--out", help="Result file (default: RIGBOOK_HOME/results/)."
        ),
        as_json: bool = JsonOption,
    ) -> None:
        """Hide salted facts in a long prompt and ask for them: pass/fail, prompt tokens, TTFT."""
        with handled(as_json):
            from rigbook.home import state_dir
            from rigbook.openai import base_url
            from rigbook.quality.needle import NeedleSpec, run_needle
            from rigbook.quality.present import needle_line, render_needle
            from rigbook.quality.result import run_info

            recipe_ctx = None
            if recipe is not None:
                from rigbook.recipe.resolve import resolve_recipe

                recipe_ctx = resolve_recipe(recipe).config.max_context_len
            stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
            target = out or state_dir("results") / f"needle-{stamp}.json"
            spec = NeedleSpec(
                url=base_url(url),
                model=model,
                contexts=_contexts(context),
                depths=_depths(depths),
                facts=facts,
                warm=warm,
                out=target,
                seed=secrets.randbits(31) if seed is None else seed,
                recipe=recipe,
                recipe_context=recipe_ctx,
            )
            progress = (lambda p: None) if as_json else (lambda p: console.print(needle_line(p)))
            result = asyncio.run(run_needle(spec, run_info(), progress))
            emit(
                {"result": str(target), **result.model_dump(mode="json")},
                as_json,
                lambda: render_needle(result, target, console),
            )
