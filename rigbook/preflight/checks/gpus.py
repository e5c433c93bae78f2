"""GPU checks: count, card model and variant, free memory, busy and wedged GPUs."""

from __future__ import annotations

from rigbook.findings import Finding
from rigbook.preflight.context import CheckContext, gpu_list
from rigbook.preflight.memory_need import memory_need
from rigbook.rig.cards import card_difference, model_label, parse_card
from rigbook.rig.model import Gpu


def _holders(gpu: Gpu) -> str:
    if not gpu.processes:
        return "no compute process is listed"
    return "held by " + ", ".join(
        f"pid {p.pid} {p.name or '?'}" + (f" ({p.used_mib} MiB)" if p.used_mib is not None else "")
        for p in gpu.processes
    )


def check_count(ctx: CheckContext, asked: list[int] | None) -> list[Finding]:
    """E_GPU_COUNT when fewer GPUs are available (or picked) than the recipe runs on."""
    need = ctx.recipe.gpu_count
    if len(ctx.gpus) >= need:
        return []
    if asked is not None:
        picked = ",".join(str(g.index) for g in ctx.gpus)
        have = f"--gpus {picked} picks {len(ctx.gpus)} GPU(s)"
    elif ctx.rig.gpus:
        have = f"this rig has {len(ctx.rig.gpus)}"
    else:
        have = "this rig has none (see I_NO_GPU)"
    return [
        Finding.make("E_GPU_COUNT", f"the recipe runs on {need} GPUs; {have}", gpus=ctx.indices)
    ]


def check_model(ctx: CheckContext) -> list[Finding]:
    """E_GPU_MODEL for a different card; W_GPU_VARIANT for a sibling variant (Max-Q vs Workstation) or memory size."""
    cards = [h.card for h in ctx.recipe.hardware if h.card]
    if not cards or not ctx.gpus:
        return []
    wanted = [parse_card(c) for c in cards]
    wrong: dict[str, list[int]] = {}
    variant: dict[str, list[int]] = {}
    why: dict[str, str] = {}
    for gpu in ctx.gpus:
        name = gpu.name or "an unnamed GPU"
        have = parse_card(gpu.name or "", reported=True)
        differences = [card_difference(have, w) for w in wanted]
        if None in differences:
            continue
        same_model = [d for w, d in zip(wanted, differences, strict=True) if w.model == have.model]
        (variant if same_model else wrong).setdefault(name, []).append(gpu.index)
        why[name] = " or ".join(d for d in (same_model or differences) if d)
    findings = [
        Finding.make(
            "E_GPU_MODEL",
            f"{gpu_list(idx)}: {name}; the recipe is for {' or '.join(cards)} ({why[name]})",
            gpus=idx,
        )
        for name, idx in wrong.items()
    ]
    findings += [
        Finding.make(
            "W_GPU_VARIANT",
            f"{gpu_list(idx)}: {name} is the {model_label(parse_card(name, reported=True))} the recipe asks for, "
            f"but {why[name]} (the recipe's card is {' or '.join(cards)})",
            gpus=idx,
        )
        for name, idx in variant.items()
    ]
    return findings


def check_memory(ctx: CheckContext) -> list[Finding]:
    """E_GPU_MEMORY for each GPU whose free MiB is below the recipe's need, naming what holds memory."""
    need = memory_need(ctx.recipe)
    if need is None:
        return []
    vram_gb = next((h.vram_gb for h in ctx.recipe.hardware if h.vram_gb), None)
    findings = []
    for gpu in ctx.gpus:
        mib = need.for_total(gpu.memory_total_mib, vram_gb)
        if mib is None:
            continue
        how = (
            f"{need.source}"
            if need.mib is not None
            else f"{need.fraction:g} × {gpu.memory_total_mib} MiB, {need.source}"
        )
        if gpu.memory_free_mib is None:
            findings.append(
                Finding.make(
                    "E_GPU_MEMORY",
                    f"GPU {gpu.index}: free memory could not be read; needs {mib} MiB ({how})",
                    gpus=[gpu.index],
                )
            )
        elif gpu.memory_free_mib < mib:
            findings.append(
                Finding.make(
                    "E_GPU_MEMORY",
                    f"GPU {gpu.index}: {gpu.memory_free_mib} MiB free of {gpu.memory_total_mib} MiB; needs {mib} MiB ({how}); {_holders(gpu)}",
                    gpus=[gpu.index],
                )
            )
    return findings


def check_busy(ctx: CheckContext) -> list[Finding]:
    """W_GPU_BUSY for GPUs with compute processes; W_WEDGED for 100 % utilisation with none."""
    findings = []
    for gpu in ctx.gpus:
        if gpu.processes:
            findings.append(
                Finding.make(
                    "W_GPU_BUSY",
                    f"GPU {gpu.index}: {len(gpu.processes)} compute process(es), {_holders(gpu)}",
                    gpus=[gpu.index],
                )
            )
        elif gpu.utilization_gpu_pct is not None and gpu.utilization_gpu_pct >= 100:
            findings.append(
                Finding.make(
                    "W_WEDGED",
                    f"GPU {gpu.index}: {gpu.utilization_gpu_pct} % utilised and no process owns it",
                    gpus=[gpu.index],
                )
            )
    return findings
