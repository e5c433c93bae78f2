"""What every command shares: printing JSON or rich text, and turning errors into exit codes."""

from __future__ import annotations

import errno
import json
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
from pydantic import BaseModel
from rich.console import Console, ConsoleOptions, RenderableType
from rich.markup import escape
from rich.segment import Segment
from rich.text import Text

from rigbook.errors import ErrorDocument, InternalError, RigbookError

# Characters that drive a terminal rather than show: C0 and C1 controls (ESC starts cursor moves,
# screen erases and OSC clipboard writes; CR and BS overwrite what was shown), DEL, the bidi
# overrides that reorder what a line seems to say, and lone surrogates (no encoding writes them).
# Line breaks and tabs only lay text out.
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every terminal control character written out as an escape (ESC as ``\\x1b``);
    line breaks and tabs kept."""
    return _CONTROL.sub(_escaped, text)


class SafeConsole(Console):
    """A rich console that escapes every control character in the text it prints.

    Recipes are written by strangers, and their text (names, arguments, messages quoting them)
    reaches every command's output. Escaping here, where all text is turned into output, means no
    command can forget it: strings are escaped before layout (so widths hold), and every rendered
    segment again (text objects built elsewhere). rich's own style codes are added after this and
    stay intact; links, which rigbook never prints, are dropped.

    Its width is read when it prints, not when it is made: rich fixes ``COLUMNS`` at
    construction, and this console is made once, at import.
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        if "width" not in kwargs:
            self._width = None

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(escape_controls(text), **kwargs)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is not None:
                yield segment  # rich's own cursor moves (a live status line)
                continue
            style = segment.style
            if style is not None and style.link:
                # rigbook prints no links: one comes from markup in a recipe's text (an OSC 8
                # hyperlink that shows one address and opens another).
                style = style.clear_meta_and_links()
            yield Segment(escape_controls(segment.text), style)


console = SafeConsole()
err_console = SafeConsole(stderr=True)

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
    """Write ``value`` as indented JSON on stdout (no rich markup).

    JSON escapes C0 controls itself; the other terminal controls (DEL, C1, bidi overrides, lone
    surrogates) are written as ``\\u`` escapes too, which read back as the same string."""
    text = json.dumps(to_jsonable(value), indent=2, ensure_ascii=False)
    sys.stdout.write(_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")
    sys.stdout.flush()


def write_text(text: str) -> None:
    """Write plain text (a log, a rendered document) on stdout with its control characters escaped."""
    sys.stdout.write(escape_controls(text))
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
    # Messages quote recipes: their text is never read as markup.
    err_console.print(
        f"[bold red]error[{exc.code}][/]: {escape(exc.message)}", markup=True, highlight=False
    )
    for line in exc.details:
        err_console.print(f"  - {line}", markup=False, highlight=False)
    if exc.remedy:
        err_console.print(f"  [bold]remedy[/]: {escape(exc.remedy)}", highlight=False)


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
