"""A recipe's speculator: its ``rigbook.speculative`` block, else what its own launch says.

Recipes carry the drafter in the form their engine reads, and a public record has no rigbook
block, so the launch is read where the block is missing:

- the seed record's image knobs: ``SPECULATOR=mtp`` and ``MTP_DEPTH=3`` (``-e`` options of
  ``config.launch``, or ``rigbook.launch.env``);
- vLLM: ``--speculative-config '{"method": "ngram", "num_speculative_tokens": 3, "model": …}'``;
- llama-server: ``--spec-type T``, ``--spec-draft-n-max N`` (or ``--draft-max``), and a draft model
  (``--model-draft`` / ``-md`` / ``--spec-draft-model``).

The guide's ``DRAFTER`` is chosen when the script starts (``rigbook up --drafter``), so only its
recipe block says what the default is. Nothing is guessed beyond what these options state.
"""

from __future__ import annotations

import json
import re

from rigbook.recipe.schema import Recipe, Speculative

ENV_KNOB = re.compile(r"^[A-Z_][A-Z0-9_]*=")
DEPTH_KNOBS = ("MTP_DEPTH", "NUM_SPECULATIVE_TOKENS", "DRAFT_LENGTH")
DRAFT_MODEL_OPTIONS = ("--model-draft", "-md", "--spec-draft-model")
DRAFT_MAX_OPTIONS = ("--spec-draft-n-max", "--draft-max", "--draft")


def _options(argv: list[str]) -> dict[str, str]:
    """``--name value`` and ``--name=value`` pairs of an argv (the last one wins)."""
    found: dict[str, str] = {}
    for i, arg in enumerate(argv):
        if arg.startswith("-") and "=" in arg:
            name, value = arg.split("=", 1)
            found[name] = value
        elif arg.startswith("-") and i + 1 < len(argv):
            found[arg] = argv[i + 1]
    return found


def _length(value: object) -> int | None:
    """A draft length as the schema takes it (1 to 64), or None."""
    try:
        n = int(str(value))
    except ValueError:
        return None
    return n if 1 <= n <= 64 else None


def from_launch(argv: list[str], env: dict[str, str]) -> Speculative | None:
    """The speculator an engine's argv and env state, or None where they state none."""
    options = _options(argv)
    # `docker run -e KEY=VALUE`, each of them (an option read as a pair keeps only the last).
    knobs = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg in ("-e", "--env")]
    env = env | dict(k.split("=", 1) for k in knobs if ENV_KNOB.match(k))
    if env.get("SPECULATOR"):
        depth = next((_length(env[k]) for k in DEPTH_KNOBS if k in env), None)
        return Speculative(method=env["SPECULATOR"], draft_length=depth)
    config = options.get("--speculative-config") or options.get("--speculative_config")
    if config:
        try:
            parsed = json.loads(config)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and (parsed.get("method") or parsed.get("model")):
            return Speculative(
                method=str(parsed.get("method") or "draft_model"),
                drafter=str(parsed["model"]) if parsed.get("model") else None,
                draft_length=_length(parsed.get("num_speculative_tokens")),
            )
    drafter = next((options[o] for o in DRAFT_MODEL_OPTIONS if o in options), None)
    method = options.get("--spec-type")
    if method or drafter:
        return Speculative(
            method=method or "draft-simple",
            drafter=drafter,
            draft_length=next(
                (_length(options[o]) for o in DRAFT_MAX_OPTIONS if o in options), None
            ),
        )
    return None


def speculator(recipe: Recipe) -> Speculative | None:
    """The recipe's speculator: its own block where it has one, else what its launch states."""
    if recipe.ext.speculative is not None:
        return recipe.ext.speculative
    launch = recipe.ext.launch
    argv = [*recipe.config.launch, *(getattr(launch, "args", None) or [])]
    return from_launch(argv, dict(getattr(launch, "env", None) or {}))
