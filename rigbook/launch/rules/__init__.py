"""The safety rules a launch config must pass, one module per class of hole.

Every rule returns :class:`Danger` items: what the recipe asks for, why it is
dangerous, and the ``--allow`` name that lets it through (None: never).
``rigbook.launch.safety`` applies them; `plan`, `up` and `check` share them.
"""

from __future__ import annotations

from typing import NamedTuple


class Danger(NamedTuple):
    """One refused construct: the ``--allow`` name that lets it through (None: nothing does) and
    why."""

    allow: str | None
    what: str
