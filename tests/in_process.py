"""`rigbook ARGS` run in the test's own process, through the same entry point as `python -m rigbook`.

For tests of what a command prints and exits with: a subprocess spends most of a second importing
the CLI again. A test of the process itself (signals, a kill, what it leaves running) still starts
one.
"""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from rigbook.cli.app import app
from rigbook.cli.output import run_main


def rigbook_here(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`rigbook ARGS` through :func:`run_main` (so ``--json`` usage errors and unexpected
    failures take the real path), stdin not a terminal; returns what a subprocess run would:
    the exit status and stdout and stderr as text. ``env`` is added to this process's."""
    argv = sys.argv
    with CliRunner().isolation(env=env) as (out, err, _):
        sys.argv = ["rigbook", *args]
        try:
            run_main(app)
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else int(done.code is not None)
        finally:
            sys.argv = argv
            sys.stdout.flush()  # the isolation's text layers over ``out`` and ``err``
            sys.stderr.flush()
        return subprocess.CompletedProcess(
            ["rigbook", *args], code, out.getvalue().decode(), err.getvalue().decode()
        )
