"""Rigbook's own options (host, port, model, served name, GPU selection) belong to rigbook.

The engines read their options with argparse, which takes an unambiguous prefix
as the whole name (``--hos 0.0.0.0`` is ``--host``) and reads ``--opt=value`` and
``--opt value`` alike; vLLM also reads ``_`` as ``-``. So a recipe argument is
compared after the same normalisation, and any prefix of an owned option is
refused. Exact ``--host``/``--port`` (the public record writes them) are
replaced by rigbook and shown in the plan; everything else is E_UNSAFE.
"""

from __future__ import annotations

from rigbook.launch.rules import Danger

# Per engine kind: options rigbook sets (replaced when written exactly) and options nobody may set.
REPLACED = {"--host", "--port"}
OWNED = {
    "vllm": {
        "--host",
        "--port",
        "--model",
        "--served-model-name",
        "--config",
        "--uds",
        "--data-parallel-address",
    },
    "sglang": {
        "--host",
        "--port",
        "--model-path",
        "--model",
        "--served-model-name",
        "--base-gpu-id",
        "--gpu-id-step",
        "--config",
        "--nnodes",
        "--node-rank",
        "--dist-init-addr",
    },
    "llama_cpp": {
        "--host",
        "--port",
        "--model",
        "--model-alias",
        "--config-file",
        "--hf-model-repo-id",
    },
    "llama_server": {
        "--host",
        "--port",
        "--model",
        "--model-url",
        "--hf-repo",
        "--alias",
        "--path",
        "--api-prefix",
        "--device",
        "--hf-file",
        "--docker-repo",
        "--config",
    },
}


def _normal(item: str) -> str:
    return item.split("=", 1)[0].replace("_", "-").lower()


def owned_option(kind: str, item: str) -> str | None:
    """The owned option that ``item`` sets (exactly, as ``--opt=value``, or as a prefix), else
    None."""
    if not item.startswith("--") or item == "--":
        return None
    written = _normal(item)
    if len(written) <= 2:
        return None
    hits = sorted(o for o in OWNED.get(kind, set()) if o.startswith(written))
    return hits[0] if hits else None


def option_dangers(kind: str, args: list[str]) -> list[Danger]:
    """An owned option set by the recipe in any form but the exact ``--host``/``--port`` rigbook
    replaces."""
    found = []
    for item in args:
        owned = owned_option(kind, item)
        if owned is None:
            continue
        if item.split("=", 1)[0] in REPLACED:
            continue  # replaced by rigbook's value, and shown in the plan
        found.append(
            Danger(
                None,
                f"argument {item!r} sets {owned}, which rigbook sets itself "
                "(host, port, model, served name and GPU selection are rigbook's)",
            )
        )
    return found
