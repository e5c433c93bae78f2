"""`rigbook rig`: probe this machine into a Rig document."""

from __future__ import annotations

import sys
from itertools import combinations
from pathlib import Path

import typer
from rich.padding import Padding
from rich.table import Table

from rigbook.cli.output import JsonOption, console, emit, handled
from rigbook.errors import InputError
from rigbook.rig.model import Rig, save_rig
from rigbook.rig.p2p_test import run_p2p_test
from rigbook.rig.probe import probe_rig


def _num(value: float | int | None, unit: str = "") -> str:
    return "?" if value is None else f"{value:g}{unit}"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def render_rig(rig: Rig) -> None:
    """Print a Rig as a few lines and tables."""
    h = rig.host
    console.print(
        f"[bold]{h.hostname}[/]: {h.os}, kernel {h.kernel}, {h.arch}; {h.cpu_model} × {h.cpu_count}; "
        f"RAM {_num(h.ram_total_mib, ' MiB')}" + ("; in a container" if h.in_container else ""),
        highlight=False,
    )
    if rig.driver:
        console.print(
            f"driver {rig.driver.driver_version}, CUDA {rig.driver.cuda_driver_version}",
            highlight=False,
        )
    if not rig.gpus:
        console.print(f"[yellow]no GPU[/]: {rig.reason}", highlight=False)
    else:
        # A block per GPU: names and power figures are too long for an 80-column table.
        for g in rig.gpus:
            console.print(
                f"[bold]GPU {g.index}[/] {g.name or '?'} · CC {g.compute_capability or '?'} · "
                f"{g.pci_bus_id or '?'}",
                highlight=False,
            )
            console.print(
                Padding(
                    f"memory {_num(g.memory_free_mib)} free of {_num(g.memory_total_mib)} MiB · power limit "
                    f"{_num(g.power_enforced_limit_w, ' W')} enforced (default {_num(g.power_default_limit_w)}, "
                    f"max {_num(g.power_max_limit_w)}) · draw {_num(_round(g.power_draw_w), ' W')} · "
                    f"{_num(g.temperature_c, ' °C')} · util {_num(g.utilization_gpu_pct, ' %')} · "
                    f"{len(g.processes)} process(es)",
                    (0, 0, 0, 2),
                ),
                highlight=False,
            )
    if rig.pairs:
        pairs = Table("pair", "read", "write", "nvlink", "atomics", "topology")
        for p in rig.pairs:
            pairs.add_row(
                f"{p.a}-{p.b}",
                *(
                    str(v)
                    for v in (p.p2p_read, p.p2p_write, p.p2p_nvlink, p.p2p_atomics, p.topology)
                ),
            )
        console.print(pairs)
    d = rig.docker
    console.print(
        f"docker: {'server ' + str(d.server_version) if d.available else 'not available'}; runtimes "
        f"{', '.join(d.runtimes) or 'none'}; CDI nvidia specs {len(d.cdi_devices)}",
        highlight=False,
    )
    missing = [t.name for t in rig.tools if not t.found]
    console.print(
        f"tools: {len(rig.tools) - len(missing)} found"
        + (f", missing: {', '.join(missing)}" if missing else ""),
        highlight=False,
    )
    if rig.models_disk:
        free = rig.models_disk.free_bytes
        console.print(
            f"models dir {rig.models_disk.path}: {'?' if free is None else f'{free / 1e9:.1f} GB'} free",
            highlight=False,
        )
    if rig.p2p_test:
        t = rig.p2p_test
        if t.skipped:
            console.print(f"peer copy test skipped: {t.skipped}", highlight=False)
        for c in t.pairs:
            console.print(
                f"peer copy {c.a}-{c.b} ({t.backend}): {'verified' if c.verified else 'FAILED'} "
                f"{_num(c.gbps_a_to_b)} / {_num(c.gbps_b_to_a)} GB/s"
                + (f" ({c.error})" if c.error else ""),
                highlight=False,
            )
    failed = (
        sum(len(s.errors) for s in (rig.host, rig.iommu, rig.docker))
        + sum(len(g.errors) for g in rig.gpus)
        + len(rig.errors)
    )
    if failed:
        console.print(
            f"{failed} queries failed; `rigbook rig --json` lists each with its error",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""

    @app.command("rig")
    def rig_command(
        save: Path = typer.Option(None, "--save", help="Write the Rig document to this file."),
        models_dir: Path = typer.Option(
            None, "--models-dir", help="Where models are stored (default RIGBOOK_HOME/models)."
        ),
        p2p_test: bool = typer.Option(
            False,
            "--p2p-test",
            help="Copy a buffer both ways between every GPU pair (needs PyTorch or CuPy).",
        ),
        yes: bool = typer.Option(False, "--yes", help="Overwrite the --save file without asking."),
        as_json: bool = JsonOption,
    ) -> None:
        """Probe this machine: OS, CPU, RAM, every NVIDIA GPU, peer access, driver, Docker, tools, disk."""
        with handled(as_json):
            if save is not None and save.exists() and not yes:
                # Only a person at a terminal can be asked; a script gets the answer it can act on.
                if as_json or not sys.stdin.isatty():
                    raise InputError(
                        "E_CONFIRM",
                        f"{save} exists and was not overwritten",
                        "Pass --yes to overwrite it, or --save another file.",
                    )
                if not typer.confirm(f"{save} exists; overwrite?", default=False):
                    raise InputError("E_CONFIRM", f"{save} exists and was not overwritten")
            rig = probe_rig(models_dir)
            if p2p_test:
                rig.p2p_test = run_p2p_test(list(combinations([g.index for g in rig.gpus], 2)))
            if save is not None:
                save_rig(rig, save)
            emit(rig, as_json, lambda: render_rig(rig))
            if save is not None and not as_json:
                console.print(f"saved {save}", highlight=False)
