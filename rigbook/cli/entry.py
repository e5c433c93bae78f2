"""The `rigbook` command's first code: a Ctrl-C while the CLI is still importing ends quietly.

Importing the commands (pydantic models, httpx, rich) takes about half a second; an interrupt
then would otherwise print a KeyboardInterrupt traceback from somewhere inside an import.
"""

from __future__ import annotations

import os
import signal


def main() -> None:
    """Console-script entry point: import the CLI with Ctrl-C meaning "exit 130", then run it."""
    signal.signal(signal.SIGINT, lambda *_: os._exit(130))
    from rigbook.cli.app import main as run

    signal.signal(signal.SIGINT, signal.default_int_handler)
    run()
