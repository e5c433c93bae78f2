"""The error hierarchy: every failure a user can meet carries a code and a remedy.

Codes come from the one registry in :mod:`rigbook.codes`; the CLI prints
``error[CODE]: message`` and the remedy, and exits with ``exit_code``
(2 for bad input or an error finding, 1 for an internal failure).
"""

from __future__ import annotations

from rigbook.codes import CODES


class RigbookError(Exception):
    """Base of every error rigbook raises on purpose."""

    exit_code: int = 2

    def __init__(self, code: str, message: str, remedy: str | None = None, *, details: list[str] | None = None):
        if code not in CODES:
            raise ValueError(f"unregistered code {code!r}; add it to rigbook/codes.py")
        self.code = code
        self.message = message
        self.remedy = remedy if remedy is not None else CODES[code].remedy
        self.details = details or []
        super().__init__(f"{code}: {message}")

    def to_dict(self) -> dict:
        """The error as the JSON the CLI prints with ``--json``."""
        return {"code": self.code, "message": self.message, "remedy": self.remedy, "details": self.details}


class InputError(RigbookError):
    """The user's input (a recipe, a file, an option) is wrong."""


class RecipeInvalid(InputError):
    """A recipe failed validation; ``details`` lists every problem by field path."""


class FetchError(InputError):
    """A file or URL could not be read."""


class EnvironmentProblem(RigbookError):
    """Something on this machine (a tool, a GPU, a port, disk) is missing or wrong."""


class LaunchError(RigbookError):
    """An engine failed to start, become ready, or answer."""


class EndpointError(RigbookError):
    """An OpenAI-compatible endpoint refused, failed or answered wrongly."""


class InternalError(RigbookError):
    """A bug in rigbook itself."""

    exit_code = 1
