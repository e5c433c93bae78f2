"""A finding: one coded observation, with its message and remedy, that does not stop a command.

One record for every finding rigbook reports: a preflight check's, and the warnings a bench or
capacity result carries. Like an error it has a registered code and the registry's remedy, so
``--json`` and result files say what to do, not only what happened.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

from rigbook.codes import CODES, Code, Severity, as_code


class Finding(BaseModel):
    """One coded observation. ``severity`` comes from the registry unless given.

    A plain ``"W_CODE: message"`` string validates as the record it spells, with the registry's
    severity and remedy: results written before warnings were records (files, and bodies stored
    on a hub) carry their warnings so."""

    code: Code
    severity: Severity
    gpus: list[int] = Field(default_factory=list)
    message: str
    remedy: str

    @classmethod
    def make(
        cls,
        code: Code | str,
        message: str,
        *,
        gpus: list[int] | None = None,
        remedy: str | None = None,
        severity: Severity | None = None,
    ) -> Finding:
        """A finding for a registered code, with the registry's severity and remedy by default."""
        code = as_code(code)
        entry = CODES[code]
        return cls(
            code=code,
            severity=severity or entry.severity,
            gpus=gpus or [],
            message=message,
            remedy=remedy or entry.remedy,
        )

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        code, sep, message = value.partition(": ")
        if not sep:
            raise ValueError(f"a finding written as text reads 'CODE: message', not {value!r}")
        return cls.make(code, message).model_dump()

    @property
    def blocks(self) -> bool:
        """True for an error finding (it blocks a launch)."""
        return self.severity == Severity.error

    @property
    def line(self) -> str:
        """``CODE: message``, as the terminal shows it (and as results once stored it)."""
        return f"{self.code}: {self.message}"
