"""`rigbook agree`: paired multiple-choice answers of two endpoints (thin: parse, run, print)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

import typer

from rigbook.cli.output import JsonOption, console, emit, handled


def register(app: typer.Typer) -> None:
    """Add `agree` to the main app."""

    @app.command("agree")
    def agree(
        a_url: str = typer.Argument(..., help="Base URL of endpoint A."),
        b_url: str = typer.Argument(..., help="Base URL of endpoint B."),
        suite: str = typer.Option(
            "generated",
            "--suite",
            help="generated[@VERSION], a JSONL file (rigbook's or MMLU-Pro's layout), "
            "or hf:OWNER/NAME@COMMIT[:PATH] (MMLU-Pro layout).",
        ),
        n: int = typer.Option(
            200, "--n", min=1, help="Questions to ask (a shorter suite is asked in full)."
        ),
        seed: int = typer.Option(
            0, "--seed", help="Sampling seed; also picks a hub dataset's sample."
        ),
        max_tokens: int = typer.Option(16, "--max-tokens", min=1, help="Reply cap per question."),
        a_model: str = typer.Option(
            None, "--a-model", help="A's model id (default: first listed)."
        ),
        b_model: str = typer.Option(
            None, "--b-model", help="B's model id (default: first listed)."
        ),
        a_recipe: str = typer.Option(None, "--a-recipe", help="Recipe A runs (recorded)."),
        b_recipe: str = typer.Option(None, "--b-recipe", help="Recipe B runs (recorded)."),
        out: Path = typer.Option(
            None, "--out", help="Result file (default: RIGBOOK_HOME/results/)."
        ),
        as_json: bool = JsonOption,
    ) -> None:
        """Ask two endpoints the same questions greedily: accuracy, agreement, exact McNemar p."""
        with handled(as_json):
            from rigbook.home import state_dir
            from rigbook.openai import base_url
            from rigbook.quality.agree import AgreeSpec, run_agree
            from rigbook.quality.present import agree_line, render_agree
            from rigbook.quality.result import run_info
            from rigbook.quality.suite_spec import load_suite

            questions = load_suite(suite, n, seed)
            if questions.info.note and not as_json:
                console.print(f"[yellow]note: {questions.info.note}[/]", highlight=False)
            stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
            target = out or state_dir("results") / f"agree-{stamp}.json"
            spec = AgreeSpec(
                a_url=base_url(a_url),
                b_url=base_url(b_url),
                a_model=a_model,
                b_model=b_model,
                suite=questions,
                out=target,
                a_recipe=a_recipe,
                b_recipe=b_recipe,
                max_tokens=max_tokens,
                seed=seed,
            )
            progress = (
                (lambda i, o: None) if as_json else (lambda i, o: console.print(agree_line(i, o)))
            )
            result = asyncio.run(run_agree(spec, run_info(), progress))
            emit(
                {"result": str(target), **result.model_dump(mode="json", exclude={"questions"})},
                as_json,
                lambda: render_agree(result, target, console),
            )
