"""Workloads made from a user's file: ``trace:PATH`` replays a request trace
(:mod:`rigbook.bench.workloads.trace`), ``dataset:PATH`` or ``dataset:hf:OWNER/NAME@COMMIT:PATH``
sends a dataset's prompts (:mod:`rigbook.bench.workloads.dataset`). Any other name is a shipped
workload (:func:`rigbook.bench.workloads.model.get_workload`).

The workload a result names carries the file's sha256 and how it was used (the replay speed, or
the dataset's filters, sample and seed), so its content hash changes with any of them and
``compare`` refuses results made from other bytes or another selection.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from rigbook.bench.workloads.dataset import load_dataset
from rigbook.bench.workloads.model import Workload, get_workload
from rigbook.bench.workloads.trace import Trace, read_trace
from rigbook.errors import InputError


class Resolved(BaseModel):
    """A workload, with the trace it replays or the prompts it sends where it has them."""

    model_config = ConfigDict(frozen=True)

    workload: Workload
    trace: Trace | None = None
    prompts: tuple[str, ...] | None = None


def resolve_workload(
    spec: str,
    *,
    speed: float = 1.0,
    block_tokens: int | None = None,
    dataset_size: int = 64,
    seed: int = 0,
    min_prompt_chars: int = 1,
    max_prompt_chars: int | None = None,
) -> Resolved:
    """The workload ``spec`` names (see the module's docstring)."""
    kind, _, rest = spec.partition(":")
    if kind == "trace" and rest:
        if speed <= 0:
            raise InputError("E_INPUT", f"--speed {speed} is not above 0", "Write e.g. --speed 2.")
        trace = read_trace(Path(rest), block_tokens=block_tokens)
        workload = Workload(
            name=f"trace:{Path(rest).name}",
            version=1,
            kind="trace",
            description=f"Replay of {rest} ({trace.layout} layout, {len(trace.requests)} "
            f"requests over {trace.span_s:.1f} s) at speed {speed:g}: each request at its "
            "arrival time, its prompt of its input length, its reply held to its output length.",
            source=rest,
            source_sha256=trace.sha256,
            selection=f"speed {speed:g}, blocks of {trace.block_tokens} tokens",
        )
        return Resolved(workload=workload, trace=trace)
    if kind == "dataset" and rest:
        got = load_dataset(
            rest,
            n=dataset_size,
            seed=seed,
            min_chars=min_prompt_chars,
            max_chars=max_prompt_chars,
        )
        name = rest.rsplit("/", 1)[-1] if not rest.startswith("hf:") else rest.split("@")[0][3:]
        workload = Workload(
            name=f"dataset:{name}",
            version=1,
            kind="dataset",
            description=f"The first human prompts of {got.source} (ShareGPT layout): "
            f"{got.selection}; replies held to the profile's length.",
            source=got.source,
            source_sha256=got.sha256,
            selection=got.selection,
        )
        return Resolved(workload=workload, prompts=got.prompts)
    return Resolved(workload=get_workload(spec))


def searchable(spec: str, command: str) -> None:
    """Refuse a trace where a command searches or repeats concurrency levels: a trace's arrival
    times set its load, so it has no level to vary."""
    if spec.partition(":")[0] == "trace":
        raise InputError(
            "E_INPUT",
            f"`rigbook {command}` cannot take --workload {spec}: a trace sets its own load, so "
            "there are no concurrency levels to search or repeat",
            "Replay the trace with `rigbook bench URL --workload trace:FILE`, or give "
            f"{command} a session or dataset workload.",
        )
