"""The error hierarchy: every failure a user can meet carries a code and a remedy.

The code decides the class. Each entry of the registry in :mod:`rigbook.codes` names the class
its errors are, so ``RigbookError(Code.E_AUTH, "...")`` *is* an :class:`AuthError`, and a caller
catches by class or reads ``.code`` and both agree::

    from rigbook.codes import Code
    from rigbook.errors import InputError, RigbookError

    raise InputError(Code.E_RESULT_INVALID, "result.json: the hash does not check out")
    raise RigbookError("E_CONNECT", "nothing listens on :8000")  # an EndpointError

A code given as a string is checked at once (an unknown one raises ValueError), and naming a
class the code does not belong to (``LaunchError("E_INPUT", ...)``) raises TypeError; a test
checks every such call in the repository, so neither waits for a user to meet it.

The CLI prints ``error[CODE]: message`` and the remedy, or with ``--json`` the
:class:`ErrorDocument`, which is also what the hub API answers and the hub client reads; it exits
with ``exit_code`` (2 for bad input or an error finding, 1 for an internal failure).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from rigbook.codes import CODES, Code, as_code


class ErrorBody(BaseModel):
    """An error as JSON: its code, what happened, what to do, and one line per detail."""

    code: Code
    message: str
    remedy: str
    details: list[str] = Field(default_factory=list)


class ErrorDocument(BaseModel):
    """``{"error": {...}}``: the one shape of an error in the CLI's JSON, the hub API's answers
    and what the hub client reads."""

    error: ErrorBody


class RigbookError(Exception):
    """Base of every error rigbook raises on purpose; the class is the one the code names."""

    exit_code: int = 2

    def __new__(cls, code: Code | str, *args: Any, **kwargs: Any) -> RigbookError:
        wanted = error_class(as_code(code))
        if not issubclass(wanted, cls):
            raise TypeError(
                f"{code} is raised as {wanted.__name__}, not {cls.__name__}; write "
                f"{wanted.__name__}({code!r}, ...) or RigbookError({code!r}, ...)"
            )
        return super().__new__(wanted)

    def __init__(
        self,
        code: Code | str,
        message: str,
        remedy: str | None = None,
        *,
        details: list[str] | None = None,
    ):
        self.code = as_code(code)
        self.message = message
        self.remedy = remedy if remedy is not None else CODES[self.code].remedy
        self.details = details or []
        super().__init__(f"{self.code}: {message}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Exception pickles as cls(*args); ours take the code first, so rebuild from the fields.
        return (_rebuild, (self.code.value, self.message, self.remedy, self.details))

    def body(self) -> ErrorBody:
        """The error as the model the CLI's ``--json``, the hub API and the hub client share."""
        return ErrorBody(
            code=self.code, message=self.message, remedy=self.remedy, details=self.details
        )

    def to_dict(self) -> dict[str, Any]:
        """The error as the JSON value of :meth:`body`."""
        return self.body().model_dump(mode="json")


def _rebuild(code: str, message: str, remedy: str, details: list[str]) -> RigbookError:
    return RigbookError(code, message, remedy, details=details)


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


class HubError(RigbookError):
    """The hub refused a request for a reason of its own, not for what was sent."""


class AuthError(HubError):
    """The hub refused the API token (HTTP 401 or 403)."""


class RateLimited(HubError):
    """The hub asks to slow down (HTTP 429)."""


class HubServerError(HubError):
    """The hub failed on its side (HTTP 5xx)."""


class InternalError(RigbookError):
    """A bug in rigbook itself: what the CLI reports for an exception nobody raised on purpose."""

    exit_code = 1


_CLASSES: dict[str, type[RigbookError]] = {
    c.__name__: c
    for c in (
        RigbookError,
        InputError,
        RecipeInvalid,
        FetchError,
        EnvironmentProblem,
        LaunchError,
        EndpointError,
        HubError,
        AuthError,
        RateLimited,
        HubServerError,
        InternalError,
    )
}
_unknown = {info.raises for info in CODES.values() if info.raises and info.raises not in _CLASSES}
if _unknown:
    raise ImportError(f"rigbook.codes names error classes that do not exist: {sorted(_unknown)}")


def error_class(code: Code | str) -> type[RigbookError]:
    """The class an error with ``code`` is; TypeError for a warning or info (a finding)."""
    info = CODES[as_code(code)]
    if info.raises is None:
        raise TypeError(f"{info.code} is a {info.severity.value} finding, not an error to raise")
    return _CLASSES[info.raises]
