"""The sandbox check: can this machine confine the native engine the recipe starts?"""

from __future__ import annotations

from rigbook.errors import RigbookError
from rigbook.preflight.context import CheckContext
from rigbook.preflight.finding import Finding


def check_sandbox(ctx: CheckContext) -> list[Finding]:
    """W_SANDBOX when the recipe starts a native engine and no sandbox can be made on this
    machine (a live rig only: a saved rig's document says nothing of bubblewrap)."""
    if not ctx.rig.live:
        return []
    # Imported here: rigbook.launch imports the preflight check.
    from rigbook.launch.sandbox import ALLOW, NATIVE_KINDS, probe
    from rigbook.launch.spec import launch_spec

    try:
        kind = launch_spec(ctx.recipe).kind
    except RigbookError:
        return []  # no launch rigbook can run: `plan` says why
    found = probe()
    if kind not in NATIVE_KINDS or found.ok:
        return []
    return [
        Finding.make(
            "W_SANDBOX",
            f"the {kind} engine cannot be sandboxed here: {found.reason}; "
            f"`up` refuses it unless you pass --allow {ALLOW}",
        )
    ]
