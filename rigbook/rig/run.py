"""Run an external program with a timeout; the result says what happened, it never raises or hangs."""

from __future__ import annotations

import subprocess

from pydantic import BaseModel

DEFAULT_TIMEOUT_S = 10.0


class CmdResult(BaseModel):
    """One finished (or failed) command."""

    argv: list[str]
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None

    @property
    def ok(self) -> bool:
        """It ran and exited 0."""
        return self.error is None and self.returncode == 0

    def describe_failure(self) -> str:
        """One line: why the command gave no usable answer."""
        if self.error:
            return self.error
        tail = (self.stderr or self.stdout).strip().splitlines()
        return f"`{' '.join(self.argv)}` exited {self.returncode}" + (
            f": {tail[-1]}" if tail else ""
        )


def run_cmd(argv: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> CmdResult:
    """Run ``argv`` (no shell) with ``timeout_s``; a missing program or a timeout is an ``error``."""
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
            errors="replace",
        )
    except FileNotFoundError:
        return CmdResult(argv=argv, error=f"{argv[0]}: not found")
    except subprocess.TimeoutExpired:
        return CmdResult(
            argv=argv, error=f"`{' '.join(argv)}` did not finish within {timeout_s:g} s"
        )
    except OSError as exc:
        return CmdResult(argv=argv, error=f"{argv[0]}: {exc.strerror or exc}")
    return CmdResult(argv=argv, returncode=done.returncode, stdout=done.stdout, stderr=done.stderr)
