"""Turn a recipe, a rig and the user's choices into a :class:`Plan`: the numbered steps `up` takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rigbook.errors import InputError
from rigbook.findings import Finding
from rigbook.home import rigbook_home
from rigbook.launch.engines import engine_for
from rigbook.launch.engines.base import step
from rigbook.launch.placeholders import GPU_ENV_DEFAULTS
from rigbook.launch.plan import Download, GpuRef, Plan, Step, StepKind, Target
from rigbook.launch.safety import (
    check_allow_names,
    describe,
    refuse_unless_allowed,
    refused,
    remedy_for,
)
from rigbook.launch.sandbox import confine
from rigbook.launch.screen import screen
from rigbook.launch.spec import launch_spec
from rigbook.launch.state import check_name
from rigbook.launch.weights import free_bytes
from rigbook.openai.urls import server_url
from rigbook.ports import parse_port
from rigbook.recipe.hf import artifact_repo, weights_dir
from rigbook.recipe.schema import Recipe
from rigbook.rig.gpu_ids import parse_gpu_ids

# Findings about the recipe itself, which hold wherever an external endpoint runs; the rest are about this machine.
EXTERNAL_FINDINGS = {"W_LICENSE"}
DEFAULT_READY_TIMEOUT = 900.0


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB"


def _gpu_tokens(wanted: str, need: int) -> list[str]:
    """The ``--gpus`` items, as many as the recipe runs on; else E_INPUT."""
    tokens = parse_gpu_ids(wanted)
    if need and len(tokens) != need:
        raise InputError(
            "E_INPUT",
            f"--gpus {wanted}: this recipe runs on {need} GPU(s), not {len(tokens)}",
            remedy=f"Name exactly {need} GPU(s).",
        )
    return tokens


def choose_gpus(recipe: Recipe, rig: Any | None, wanted: str | None) -> tuple[list[GpuRef], bool]:
    """The GPUs to use: those named by ``--gpus`` (indices or UUIDs), else the rig's first N; and whether by UUID."""
    known = [
        GpuRef(index=g.index, uuid=getattr(g, "uuid", None))
        for g in (rig.gpus if rig is not None else [])
    ]
    if not wanted:
        if recipe.gpu_count == 0:
            return [], False
        return (
            known[: recipe.gpu_count]
            if rig is not None
            else [GpuRef(index=i) for i in range(recipe.gpu_count)]
        ), False
    tokens = _gpu_tokens(wanted, recipe.gpu_count)
    by_uuid = any(not t.isdigit() for t in tokens)
    chosen = []
    for position, token in enumerate(tokens):
        match = [g for g in known if str(g.index) == token or g.uuid == token]
        if rig is not None and not match:
            raise InputError(
                "E_INPUT",
                f"--gpus {wanted}: this rig has no GPU {token!r}; it has "
                + (", ".join(f"{g.index} ({g.uuid})" for g in known) or "none"),
            )
        chosen.append(
            match[0]
            if match
            else GpuRef(
                index=int(token) if token.isdigit() else position,
                uuid=None if token.isdigit() else token,
            )
        )
    return chosen, by_uuid


def _check_step(recipe: Recipe, rig: Any | None, target: Target, *, local: bool) -> Step:
    """The preflight check; for an endpoint that runs elsewhere (``local`` False) only findings about the recipe."""
    if rig is None:
        return step(
            StepKind.check,
            "check the recipe against this rig",
            ["skipped: no rig given, and a dry run does not probe the machine (pass --rig FILE)"],
        )
    from rigbook.preflight.check import check_recipe

    report = check_recipe(
        recipe,
        rig,
        gpus=[g.index for g in target.gpus] or None,
        port=target.port,
        models_dir=target.models_dir,
    )
    # The safety rules' findings belong to the start step, where --allow applies to them.
    found = [f for f in report.findings if f.code != "E_UNSAFE"]
    findings = found if local else [f for f in found if f.code in EXTERNAL_FINDINGS]
    summary = f"{len(findings)} finding(s); " + (
        "an error finding blocks the launch"
        if any(f.blocks for f in findings)
        else "nothing blocks the launch"
    )
    details = (
        [summary]
        if local
        else [
            "the endpoint runs elsewhere: this machine's GPUs, driver, disk and port are not checked",
            summary,
        ]
    )
    checked = step(StepKind.check, "check the recipe against this rig", details)
    checked.findings = findings
    return checked


def _weights_steps(recipe: Recipe, target: Target) -> list[Step]:
    steps = []
    for artifact in recipe.artifacts:
        if artifact.kind not in ("model_weights", "drafter"):
            continue
        repo = artifact_repo(artifact)
        size = _gb(artifact.size_bytes) if artifact.size_bytes else "unknown"
        if repo:
            revision = artifact.pin or "main"
            dest = weights_dir(target.models_dir, repo, revision)
            free = free_bytes(target.models_dir)
            too_big = bool(artifact.size_bytes and artifact.size_bytes > free)
            fits = (
                ("DOES NOT FIT" if too_big else "fits")
                if artifact.size_bytes
                else "cannot be checked"
            )
            s = step(
                StepKind.weights,
                f"weights: {repo} at {revision[:12]}",
                [
                    f"from {artifact.pointer} revision {revision}"
                    + ("" if artifact.pin else " (not pinned: a branch head can change)"),
                    f"into {dest}",
                    f"size {size}; free there {_gb(free)}: {fits}",
                    "through huggingface_hub (your HF_TOKEN or `hf auth login` token; resumes after an interruption); "
                    "each file is checked against the hub's sha256 or git blob id",
                ],
            )
            s.downloads = [
                Download(
                    repo=repo,
                    revision=revision,
                    dest=dest,
                    size_bytes=artifact.size_bytes,
                    files=artifact.files,
                )
            ]
            if too_big:
                s.findings = [
                    Finding.make(
                        "E_DISK", f"{repo} needs {size}; {_gb(free)} free at {target.models_dir}"
                    )
                ]
        elif artifact.pointer_type == "python_package":
            s = step(
                StepKind.weights,
                f"weights: shipped in the Python package {artifact.pointer}",
                [f"size {size}", "nothing to download"],
            )
        else:
            s = step(
                StepKind.weights,
                f"{artifact.kind}: {artifact.pointer or 'unknown source'}",
                [
                    "fetched by the engine or its script, not by rigbook",
                    f"pin: {artifact.pin or 'none given'}",
                ],
            )
        steps.append(s)
    return steps


def _memory_note(spec: Any) -> list[str]:
    env = getattr(spec, "env", {}) or {}
    args = getattr(spec, "args", []) or []
    value = env.get("GPU_MEMORY_UTILIZATION")
    for at, item in enumerate(args):
        written, has_value, given = item.partition("=")
        if written == "--gpu-memory-utilization":
            value = given if has_value else (args[at + 1] if at + 1 < len(args) else None)
    return (
        [
            f"GPU memory utilisation {value}: that fraction of each card's total memory must be free at start"
        ]
        if value
        else []
    )


def build_plan(
    recipe: Recipe,
    *,
    rig: Any | None = None,
    gpus: str | None = None,
    port: int | str | None = None,
    models_dir: Path | None = None,
    drafter: str | None = None,
    name: str | None = None,
    allow: list[str] | None = None,
    timeout: float = DEFAULT_READY_TIMEOUT,
    dry_run: bool = False,
) -> Plan:
    """The plan for ``recipe`` on this machine. Reads no network and starts nothing.

    Every safety rule runs before the engine's command is built: a danger that no ``--allow``
    lets through is E_UNSAFE here; one that can be allowed is an error finding until it is.
    """
    spec = launch_spec(recipe)
    engine = engine_for(spec.kind)
    name = check_name(name or recipe.slug[:63], "--name")
    port = parse_port(port)
    allow = check_allow_names(list(allow or []))
    serve_port = recipe.ext.serve.port if recipe.ext.serve else None
    if spec.kind == "script_repo" and port and serve_port and port != serve_port:
        raise InputError(
            "E_INPUT", f"--port {port}: this recipe's script always listens on {serve_port}"
        )
    local = engine.starts_process
    if not local and gpus:
        raise InputError(
            "E_INPUT",
            "--gpus: an external endpoint runs elsewhere and uses no GPU of this machine; drop --gpus",
        )
    chosen, by_uuid = choose_gpus(recipe, rig, gpus) if local else ([], False)
    home = rigbook_home()
    target = Target(
        name=name,
        gpus=chosen,
        by_uuid=by_uuid,
        port=port or serve_port or 8000,
        models_dir=(models_dir or home / "models").expanduser(),
        work_dir=home / "repos",
        drafter=drafter,
        allow=sorted(set(allow)),
    )
    # The screen runs once per plan; `up` acts on this verdict and does not screen again.
    verdict, judged = screen(recipe, target, spec)
    dangers = refused(verdict, set(target.allow))
    refuse_unless_allowed([d for d in dangers if d.allow is None], set())
    command = confine(spec.kind, target, engine.command(recipe, spec, target))
    url = engine.url(spec, target)
    model_id = engine.model_id(recipe, spec)

    # An external endpoint has its weights where it runs: nothing is fetched here.
    steps = [
        _check_step(recipe, rig, target, local=local),
        *engine.fetch_steps(recipe, spec, target),
        *(_weights_steps(recipe, target) if local else []),
    ]
    if recipe.ext.autotune:
        steps.append(
            step(
                StepKind.autotune,
                "autotune kernels",
                [
                    "the engine runs its kernel autotuning as part of the start; the first launch takes longer"
                ],
            )
        )
    if command is not None:
        where = (
            ", ".join(str(g.uuid if by_uuid and g.uuid else g.index) for g in chosen) or "CPU only"
        )
        details = [
            f"GPUs: {where}",
            f"host port: {target.port}",
            *engine.notes(recipe, spec, target),
            *_memory_note(spec),
        ]
        set_gpu_env = [
            k for k in GPU_ENV_DEFAULTS if k in command.env or f"-e {k}" in " ".join(command.argv)
        ]
        if chosen and set_gpu_env:
            details.append(
                "multicast off unless you set them: "
                + ", ".join(f"{k}={GPU_ENV_DEFAULTS[k]}" for k in set_gpu_env)
            )
        details.append(f"log: {home / 'logs' / (name + '.log')}")
        started = step(
            StepKind.start, "start the engine (its own process group)", details, [command]
        )
        started.findings = [
            Finding.make("E_UNSAFE", describe(d), remedy=remedy_for(d)) for d in dangers
        ] + ([judged] if judged else [])
        steps.append(started)
    probes = ", then ".join(f"GET {server_url(url, path)}" for path in engine.ready_paths)
    steps.append(
        step(
            StepKind.ready,
            "wait until it is ready",
            [f"{probes} answers 200, for at most {timeout:.0f} s"],
        )
    )
    steps.append(
        step(
            StepKind.smoke,
            "smoke test",
            [
                f'model {model_id or "(the first listed)"}: "Say READY in one word." at temperature 0'
            ],
        )
    )
    for number, s in enumerate(steps, start=1):
        s.number = number
    return Plan(
        recipe=recipe.slug,
        kind=spec.kind,
        spec=spec,
        dangers=verdict,
        target=target,
        url=url,
        model_id=model_id,
        command=command,
        stop_commands=engine.stop_commands(spec, target),
        steps=steps,
        dry_run=dry_run,
    )
