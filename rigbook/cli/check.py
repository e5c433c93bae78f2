"""`rigbook check`: a recipe against this machine or a saved Rig."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.padding import Padding
from rich.text import Text

from rigbook.cli.output import JsonOption, console, emit, handled
from rigbook.launch import check as check_recipe
from rigbook.ports import parse_port
from rigbook.preflight.check import CheckReport
from rigbook.recipe.resolve import resolve_recipe
from rigbook.rig.gpu_ids import gpu_indices, parse_gpu_ids
from rigbook.rig.model import load_rig
from rigbook.rig.probe import probe_rig

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def render_report(report: CheckReport, rig_file: Path | None = None) -> None:
    """Each finding as a block (code, severity, GPUs; the message; the remedy), then one verdict line.

    Blocks rather than a table: messages carry numbers and NVML status names that a narrow
    table column would cut short."""
    where = (
        f"{report.hostname} (saved rig {rig_file})"
        if rig_file
        else f"{report.hostname} ({report.rig_source})"
    )
    on = f"GPUs {', '.join(map(str, report.gpus))}" if report.gpus else "no GPU"
    for f in report.findings:
        style = _STYLE[f.severity.value]
        gpus = f" · GPUs {','.join(map(str, f.gpus))}" if f.gpus else ""
        console.print(f"[{style}]{f.code}[/] {f.severity.value}{gpus}", highlight=False)
        # Messages quote the recipe: plain text, never read as markup.
        console.print(Padding(Text(f.message), (0, 0, 0, 2)), highlight=False)
        remedy = Text.assemble(("remedy: ", "dim"), f.remedy)
        console.print(Padding(remedy, (0, 0, 1, 2)), highlight=False)
    errors = sum(1 for f in report.findings if f.blocks)
    verdict = "[green]ok[/]" if report.ok else f"[bold red]{errors} error(s)[/]"
    console.print(f"{report.recipe} on {where}, {on}: {verdict}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""

    @app.command("check")
    def check_command(
        recipe: str = typer.Argument(
            ..., help="A catalog slug, a recipe .json file, or an http(s) URL."
        ),
        rig_file: Path = typer.Option(
            None, "--rig", help="Check against this saved Rig document instead of this machine."
        ),
        gpus: str = typer.Option(
            None,
            "--gpus",
            help="GPUs to use: NVML indices or UUIDs, e.g. 0,1 (default: the first the recipe needs).",
        ),
        port: str = typer.Option(
            None,
            "--port",
            help="The port the engine would listen on, 1-65535 (default: the recipe's).",
        ),
        models_dir: Path = typer.Option(
            None, "--models-dir", help="Where models are stored (default RIGBOOK_HOME/models)."
        ),
        p2p_test: bool = typer.Option(
            False,
            "--p2p-test",
            help="Also copy a buffer both ways between the GPUs (needs PyTorch or CuPy).",
        ),
        as_json: bool = JsonOption,
    ) -> None:
        """Check a recipe against this machine (or --rig FILE): exit 0 with no error finding, 2 with one."""
        with handled(as_json):
            tokens = parse_gpu_ids(gpus) if gpus is not None else None
            loaded = resolve_recipe(recipe)
            rig = load_rig(rig_file) if rig_file is not None else probe_rig(models_dir)
            picked = gpu_indices(tokens, rig) if tokens is not None else None
            report = check_recipe(
                loaded,
                rig,
                gpus=picked,
                port=parse_port(port),
                models_dir=models_dir,
                p2p_test=p2p_test,
            )
            emit(report, as_json, lambda: render_report(report, rig_file))
        if not report.ok:
            raise typer.Exit(2)
