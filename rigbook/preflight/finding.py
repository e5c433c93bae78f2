"""A finding: one thing found about a recipe on a rig, with its code, numbers and remedy."""

from __future__ import annotations

from pydantic import BaseModel, Field

from rigbook.codes import CODES, Code, Severity, as_code


class Finding(BaseModel):
    """One coded observation. ``severity`` comes from the registry unless given."""

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

    @property
    def blocks(self) -> bool:
        """True for an error finding (it blocks a launch)."""
        return self.severity == Severity.error
