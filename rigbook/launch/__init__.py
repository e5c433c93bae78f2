"""Launch a recipe: plan its steps, refuse what is unsafe, fetch, start, wait until ready, smoke-test.

Public API::

    from rigbook.launch import check, make_plan, up
"""

from rigbook.launch.api import check, make_plan, pick_recipe, up
from rigbook.launch.plan import Plan
from rigbook.launch.run import UpResult

__all__ = ["Plan", "UpResult", "check", "make_plan", "pick_recipe", "up"]
