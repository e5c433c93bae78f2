"""Hugging Face repository ids, as recipes write them, and the folder their weights go to.

The one parser of a repo id: ``rigbook up`` (what to fetch) and ``rigbook check`` (what is
already on disk) must agree on it, or the disk check counts weights as missing that are there.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

from rigbook.paths import contained


class _Pointer(Protocol):
    """What :func:`artifact_repo` reads of an artifact (the schema imports this module)."""

    pointer_type: str | None
    pointer: str | None


# Forms a pointer may take; after a URL prefix, only the first two path segments name the repo
# (``https://huggingface.co/org/name/tree/main`` is org/name).
_URL_PREFIXES = ("hf://", "https://huggingface.co/", "http://huggingface.co/", "huggingface.co/")
# The hub's rule for org and name: letters, digits, '-', '_' and '.', not starting with '.' or '-'.
_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def parse_repo_id(text: str) -> str | None:
    """``org/name`` from ``hf://org/name``, ``https://huggingface.co/org/name[/...]`` or a plain
    ``org/name``; None when ``text`` names no repository (so nothing can escape a models folder)."""
    rest = text.strip()
    parts: list[str]
    for prefix in _URL_PREFIXES:
        if rest.startswith(prefix):
            parts = rest[len(prefix) :].strip("/").split("/")[:2]
            break
    else:
        parts = rest.split("/")
    if len(parts) != 2 or not all(_SEGMENT.fullmatch(p) and ".." not in p for p in parts):
        return None
    return "/".join(parts)


def artifact_repo(artifact: _Pointer) -> str | None:
    """``org/name`` of an ``hf_model`` artifact's pointer; None for any other artifact."""
    if artifact.pointer_type != "hf_model" or not artifact.pointer:
        return None
    return parse_repo_id(artifact.pointer)


def weights_dir(models_dir: Path, repo: str, revision: str) -> Path:
    """Where ``repo`` at ``revision`` is stored: ``MODELS_DIR/org/name/revision``; E_UNSAFE when
    that resolves (``..``, a symlinked folder) outside the models folder."""
    return contained(models_dir, *repo.split("/"), *revision.split("/"), what="weights folder")
