"""What every command shares: printing JSON or rich text, and turning errors into exit codes."""

from __future__ import annotations

import errno
import json
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
from pydantic import BaseModel
from rich.console import Console

from rigbook.errors import ErrorDocument, InternalError, RigbookError

console = Console()
err_console = Console(stderr=True)

JsonOption = typer.Option(False, "--json", help="Print the result as JSON.")


def to_jsonable(value: Any) -> Any:
    """Pydantic models (and lists of them) as plain JSON values."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, list):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def print_json(value: Any) -> None:
    """Write ``value`` as indented JSON on stdout (no rich markup)."""
    sys.stdout.write(json.dumps(to_jsonable(value), indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def emit(value: Any, as_json: bool, render: Callable[[], None]) -> None:
    """Print ``value`` as JSON when asked, else call ``render`` for the human form."""
    if as_json:
        print_json(value)
    else:
        render()


def report_error(exc: RigbookError, as_json: bool) -> None:
    """Print an error with its code and remedy, as JSON or as text on stderr."""
    if as_json:
        print_json(ErrorDocument(error=exc.body()))
        return
    err_console.print(
        f"[bold red]error[{exc.code}][/]: {exc.message}", markup=True, highlight=False
    )
    for line in exc.details:
        err_console.print(f"  - {line}", markup=False, highlight=False)
    if exc.remedy:
        err_console.print(f"  [bold]remedy[/]: {exc.remedy}", highlight=False)


@contextmanager
def handled(as_json: bool = False) -> Iterator[None]:
    """Run a command body: a RigbookError becomes its message and exit code, never a traceback."""
    try:
        yield
    except RigbookError as exc:
        report_error(exc, as_json)
        raise typer.Exit(exc.exit_code) from None
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EROFS):
            report_error(RigbookError("E_DISK_FULL", f"could not write: {exc}"), as_json)
        elif exc.filename is not None:  # a path the user named or configured, not an internal fault
            report_error(RigbookError("E_FILE", f"{exc.strerror or exc}: {exc.filename}"), as_json)
        else:
            raise
        raise typer.Exit(2) from None


def _run_for_json(app: typer.Typer) -> None:
    """With --json, a bad option or argument is a JSON error too (E_INPUT), not a usage box."""
    try:
        code = app(standalone_mode=False)
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(1)
    except Exception as exc:
        # Click's UsageError (typer vendors click, so it is matched by what it does, not by class).
        if getattr(exc, "exit_code", None) != 2 or not hasattr(exc, "format_message"):
            raise
        ctx = getattr(exc, "ctx", None)
        where = f"`{ctx.command_path} --help`" if ctx is not None else "`rigbook --help`"
        report_error(RigbookError("E_INPUT", exc.format_message(), f"See {where}."), True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


def run_main(app: typer.Typer) -> None:
    """Entry point wrapper: an unexpected failure is an :class:`InternalError` (E_INTERNAL, exit 1),
    reported like any other error, as JSON with ``--json`` (traceback with RIGBOOK_DEBUG=1)."""
    as_json = "--json" in sys.argv[1:]
    try:
        if as_json:
            _run_for_json(app)
        app(standalone_mode=True)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        if os.environ.get("RIGBOOK_DEBUG"):
            traceback.print_exc()
        internal = InternalError("E_INTERNAL", f"{type(exc).__name__}: {exc}")
        report_error(internal, as_json)
        sys.exit(internal.exit_code)
