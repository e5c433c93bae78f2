"""Which suite a ``--suite`` value names: a hub dataset, a JSONL file, or a built-in suite."""

from __future__ import annotations

from pathlib import Path

from rigbook.errors import InputError
from rigbook.quality.hub_dataset import hub_suite
from rigbook.quality.suites import Suite, builtin_questions, first_n, jsonl_suite, make_suite


def load_suite(spec: str, n: int, seed: int) -> Suite:
    """``generated`` (or ``generated@1``), a JSONL file, or ``hf:OWNER/NAME@COMMIT[:PATH]``.

    ``seed`` picks a hub dataset's questions (a seeded sample); files and built-ins take the
    first ``n``. A suite of fewer than ``n`` questions is asked in full, with a note."""
    if n < 1:
        raise InputError("E_INPUT", f"--n must be at least 1, got {n}")
    if spec.startswith("hf:"):
        return hub_suite(spec, n, seed)
    path = Path(spec).expanduser()
    if path.suffix == ".jsonl" or path.is_file():
        return jsonl_suite(path, n)
    name, _, ver = spec.partition("@")
    if ver and not ver.isdigit():
        raise InputError(
            "E_SUITE", f"suite version {ver!r} is not a number", "Write e.g. generated@1."
        )
    version, questions = builtin_questions(name, int(ver) if ver else None)
    picked, selection, note = first_n(questions, n, f"suite {name} v{version}")
    return make_suite(name, f"v{version}", "builtin", picked, selection, note)
