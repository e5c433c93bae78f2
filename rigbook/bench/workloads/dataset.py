"""Prompts from a conversation dataset in ShareGPT's layout: a local file, or a Hugging Face hub
dataset at a pinned commit.

A row is a JSON object with ``conversations``, a list of turns ``{"from": ..., "value": ...}``;
its prompt is the first turn from ``human`` (or ``user``). The file is JSON Lines, or one JSON
array of rows as ShareGPT itself was published. Prompts outside the length filters (characters)
are dropped; of those left, a seeded sample of ``n`` is taken, kept in file order, so the same
file, filters, ``n`` and seed always give the same prompts.

Hub spec: ``hf:OWNER/NAME@COMMIT:PATH``, the commit a full 40-hex id (a branch could change
under the result); fetched through ``huggingface_hub``, which honours ``HF_ENDPOINT``,
``HF_TOKEN`` and its cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rigbook.errors import InputError

_HUB = re.compile(r"hf:(?P<repo>[\w.-]+/[\w.-]+)@(?P<rev>[^:]+):(?P<path>.+)")
_COMMIT = re.compile(r"[0-9a-f]{40}")
HUMAN = ("human", "user")


class DatasetPrompts(BaseModel):
    """The prompts a dataset gave, with what identifies them."""

    model_config = ConfigDict(frozen=True)

    source: str = Field(description="The file, or hf:OWNER/NAME@COMMIT:PATH.")
    sha256: str = Field(description="sha256 of the dataset file's bytes.")
    selection: str = Field(description="How the prompts were chosen: filters, sample and seed.")
    prompts: tuple[str, ...]


def _bad(source: str, where: str, what: str) -> InputError:
    return InputError(
        "E_DATASET",
        f"{source} {where}: {what}",
        "Rows need a conversations list whose first human turn has a text value "
        "(ShareGPT's layout); fix or drop that row.",
    )


def _prompt(row: object, source: str, where: str) -> str:
    if not isinstance(row, dict):
        raise _bad(source, where, "not a JSON object")
    turns = row.get("conversations")
    if not isinstance(turns, list):
        raise _bad(source, where, "has no conversations list")
    for turn in turns:
        if isinstance(turn, dict) and turn.get("from") in HUMAN:
            value = turn.get("value")
            if not isinstance(value, str):
                raise _bad(source, where, "its human turn's value is not text")
            return value
    raise _bad(source, where, "has no human turn")


def parse_sharegpt(data: bytes, source: str) -> list[str]:
    """Every row's first human prompt, in file order (JSON Lines or one JSON array)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("E_DATASET", f"{source} is not UTF-8 text: {exc}") from None
    if text.lstrip().startswith("["):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _bad(source, f"line {exc.lineno}", f"not JSON: {exc.msg}") from None
        return [_prompt(row, source, f"row {i + 1}") for i, row in enumerate(rows)]
    prompts = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _bad(source, f"line {number}", f"not JSON: {exc.msg}") from None
        prompts.append(_prompt(row, source, f"line {number}"))
    return prompts


def select(
    prompts: list[str],
    *,
    n: int,
    seed: int,
    min_chars: int = 1,
    max_chars: int | None = None,
    source: str,
) -> tuple[list[str], str]:
    """The seeded sample of ``n`` prompts within the length filters, in file order, and a line
    that says how they were chosen."""
    kept = [
        p for p in prompts if len(p) >= min_chars and (max_chars is None or len(p) <= max_chars)
    ]
    bounds = f"{min_chars}..{max_chars if max_chars is not None else ''} chars"
    if not kept:
        raise InputError(
            "E_DATASET",
            f"no prompt of {source} is {bounds} long ({len(prompts)} rows)",
            "Loosen --min-prompt-chars / --max-prompt-chars.",
        )
    if n >= len(kept):
        return kept, f"all {len(kept)} of {len(prompts)} rows with prompts of {bounds}"
    picked = sorted(random.Random(seed).sample(range(len(kept)), n))
    return (
        [kept[i] for i in picked],
        f"seeded sample of {n} of {len(kept)} prompts of {bounds} "
        f"({len(prompts)} rows; seed {seed})",
    )


def fetch_hub_file(spec: str) -> tuple[Path, str]:
    """The hub file a ``hf:OWNER/NAME@COMMIT:PATH`` spec names, downloaded (or cached), and
    the spec as fetched."""
    found = _HUB.fullmatch(spec)
    if not found:
        raise InputError(
            "E_DATASET",
            f"{spec!r} is not hf:OWNER/NAME@COMMIT:PATH",
            "Write e.g. hf:OWNER/NAME@<40-hex commit>:data/train.jsonl.",
        )
    repo, rev, path = found["repo"], found["rev"], found["path"]
    if not _COMMIT.fullmatch(rev):
        raise InputError(
            "E_DATASET",
            f"revision {rev!r} of {repo} is not a pinned commit",
            "Give the dataset's full 40-hex commit id, so the prompts cannot change under the "
            "result; the hub page's 'History' lists them.",
        )
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    except ImportError as exc:
        raise InputError(
            "E_DATASET", "huggingface_hub is not installed", "pip install 'rigbook[quality]'."
        ) from exc
    try:
        local = hf_hub_download(
            repo_id=repo,
            filename=path,
            repo_type="dataset",
            revision=rev,
            endpoint=os.environ.get("HF_ENDPOINT"),
        )
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise InputError(
            "E_DATASET",
            f"could not fetch {path} of dataset {repo}@{rev[:12]}: {type(exc).__name__}: {first}",
            "Check the repo, commit and path, the network (HF_ENDPOINT) and, for a gated "
            "dataset, HF_TOKEN.",
        ) from exc
    return Path(local), f"hf:{repo}@{rev}:{path}"


def load_dataset(
    spec: str, *, n: int, seed: int, min_chars: int = 1, max_chars: int | None = None
) -> DatasetPrompts:
    """Prompts from a ShareGPT-layout file, or from ``hf:OWNER/NAME@COMMIT:PATH``."""
    if spec.startswith("hf:"):
        file, source = fetch_hub_file(spec)
    else:
        file, source = Path(spec), spec
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InputError("E_DATASET", f"cannot read dataset {file}: {exc.strerror}") from None
    prompts, selection = select(
        parse_sharegpt(data, source),
        n=n,
        seed=seed,
        min_chars=min_chars,
        max_chars=max_chars,
        source=source,
    )
    return DatasetPrompts(
        source=source,
        sha256=hashlib.sha256(data).hexdigest(),
        selection=selection,
        prompts=tuple(prompts),
    )
