"""A file rigbook wrote, read once: its bytes as written and its JSON.

:mod:`rigbook.results` tells the kind from this and validates it; each kind's own loader
(``load_result``, ``load_capacity``, ``quality.result.load``) reads through here too, so a file
is read and parsed in one place, with one code (``E_RESULT_INVALID``, whose remedy the registry
holds). The bytes are kept because `publish`
sends (and signs) the file as written, not a re-serialised copy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rigbook.errors import InputError


class ResultFile(BaseModel):
    """One file, read once and parsed once."""

    model_config = ConfigDict(frozen=True)

    path: Path
    written: bytes = Field(description="The bytes as written: what `publish` sends and signs.")
    data: Any = Field(description="The JSON, parsed once.")

    @property
    def kind(self) -> str | None:
        """The ``kind`` the file declares; None when it is no JSON object or names none."""
        kind = self.data.get("kind") if isinstance(self.data, dict) else None
        return kind if isinstance(kind, str) else None


def read_file(path: Path | str) -> ResultFile:
    """Read ``path`` once; a file that cannot be read or is not JSON is ``E_RESULT_INVALID``."""
    path = Path(path).expanduser()
    try:
        written = path.read_bytes()
    except OSError as exc:
        raise InputError("E_RESULT_INVALID", f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(written)
    except json.JSONDecodeError as exc:
        raise InputError(
            "E_RESULT_INVALID", f"{path} is not JSON: {exc.msg} at line {exc.lineno}"
        ) from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # ValueError: an integer of thousands of digits; RecursionError: nesting thousands deep
        raise InputError("E_RESULT_INVALID", f"{path} is not JSON rigbook reads: {exc}") from None
    return ResultFile(path=path, written=written, data=data)


def invalid(file: ResultFile, what: str, exc: ValidationError) -> InputError:
    """``E_RESULT_INVALID`` for a file that is not ``what``, one detail per problem (20 at most)."""
    details = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:20]]
    return InputError(
        "E_RESULT_INVALID",
        f"{file.path} is not {what} ({exc.error_count()} problems)",
        details=details,
    )


def edited(file: ResultFile) -> InputError:
    """``E_RESULT_INVALID`` for a file whose ``content_hash`` is not that of its content."""
    return InputError(
        "E_RESULT_INVALID",
        f"{file.path}: content_hash does not match the content (edited after the run?)",
    )
