"""A question suite from a Hugging Face hub dataset in MMLU-Pro's layout, at a pinned commit.

Spec: ``hf:OWNER/NAME@COMMIT[:PATH]``. The commit must be a full 40-hex revision, so the
same spec always means the same bytes; PATH defaults to MMLU-Pro's test split. The file is
fetched through ``huggingface_hub`` (which honours ``HF_ENDPOINT`` and its cache) and may be
Parquet or JSON Lines. Rows need ``question``, ``options`` and ``answer`` (a letter) or
``answer_index``; ``question_id`` and ``category`` are kept when present, other columns are
read past. A dataset of fewer than ``n`` questions is asked in full, with a note.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
from pathlib import Path

from pydantic import ValidationError

from rigbook.errors import InputError
from rigbook.quality.suites import Suite, make_suite, question_from_row, shorter_note

DEFAULT_PATH = "data/test-00000-of-00001.parquet"
_SPEC = re.compile(r"hf:(?P<repo>[\w.-]+/[\w.-]+)@(?P<rev>[^:]+)(?::(?P<path>.+))?")
_COMMIT = re.compile(r"[0-9a-f]{40}")


def _parse(spec: str) -> tuple[str, str, str]:
    found = _SPEC.fullmatch(spec)
    if not found:
        raise InputError(
            "E_SUITE",
            f"{spec!r} is not hf:OWNER/NAME@COMMIT[:PATH]",
            "Write e.g. hf:TIGER-Lab/MMLU-Pro@<40-hex commit>.",
        )
    if not _COMMIT.fullmatch(found["rev"]):
        raise InputError(
            "E_SUITE",
            f"revision {found['rev']!r} is not a pinned commit",
            "Give the dataset's full 40-hex commit id, so the questions cannot change "
            "under the result; the hub page's 'History' lists them.",
        )
    return found["repo"], found["rev"], found["path"] or DEFAULT_PATH


def _download(repo: str, rev: str, path: str) -> Path:
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    except ImportError as exc:
        raise InputError(
            "E_SUITE", "huggingface_hub is not installed", "pip install 'rigbook[quality]'."
        ) from exc
    try:
        return Path(
            hf_hub_download(
                repo_id=repo,
                filename=path,
                repo_type="dataset",
                revision=rev,
                endpoint=os.environ.get("HF_ENDPOINT"),
            )
        )
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError, ValueError) as exc:
        raise InputError(
            "E_SUITE",
            f"could not fetch {path} of dataset {repo}@{rev[:12]}: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
            "Check the repo, commit and path, the network (HF_ENDPOINT) and, for a "
            "gated dataset, HF_TOKEN.",
        ) from exc


def _rows(file: Path) -> list[dict]:
    if file.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq  # type: ignore[import-untyped]  # pyarrow ships no type stubs
        except ImportError as exc:
            raise InputError(
                "E_SUITE", "pyarrow is needed to read Parquet", "pip install 'rigbook[quality]'."
            ) from exc
        return pq.read_table(file).to_pylist()
    text = file.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def hub_suite(spec: str, n: int, seed: int) -> Suite:
    """Fetch the dataset file and take a seeded sample of ``n`` questions, in file order (all of
    them when it has no more)."""
    repo, rev, path = _parse(spec)
    file = _download(repo, rev, path)
    try:
        rows = _rows(file)
        questions = [question_from_row(r, i, strict=False) for i, r in enumerate(rows)]
    except (ValueError, ValidationError, OSError) as exc:
        raise InputError(
            "E_SUITE",
            f"{path} of {repo} is not in MMLU-Pro's layout: {str(exc).splitlines()[0]}",
            "Rows need question, options (a list) and answer (a letter) or answer_index.",
        ) from exc
    sha = hashlib.sha256(file.read_bytes()).hexdigest()
    if n >= len(questions):
        picked, note = list(range(len(questions))), None
        if n > len(questions):
            note = shorter_note(f"{repo} {path}", len(questions), n)
        selection = f"all {len(questions)}"
    else:
        picked, note = sorted(random.Random(seed).sample(range(len(questions)), n)), None
        selection = f"seeded sample of {n} of {len(questions)} (seed {seed})"
    return make_suite(
        repo.split("/")[-1],
        rev,
        f"hf:{repo}@{rev}:{path}",
        [questions[i] for i in picked],
        f"{selection}; file sha256:{sha}",
        note,
    )
