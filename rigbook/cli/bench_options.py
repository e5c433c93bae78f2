"""The bench options `bench`, `capacity` and `reproduce` share, each declared once.

Each is named as the :class:`~rigbook.bench.request.MeasureRequest` field it fills, and
:func:`request_from` fills each field from the parameter of its name: adding a bench option is a
field and a parameter, with no mapping to keep in step. Where a command's default differs (reproduce repeats each level
by default), the option is a function of that default; its flag and help stay the same.
"""

from __future__ import annotations

from typing import Any, TypeVar

import typer
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

ModelOption: Any = typer.Option(
    None, "--model", help="Model id (default: the first the server lists)."
)
ProfileOption: Any = typer.Option(
    "seed", "--profile", help="Bench profile: seed (default) or quick."
)


def workload_option(use: str, also: str = "") -> Any:
    """``--workload``: ``use`` says what it names in this command, ``also`` what else it takes."""
    return typer.Option(
        "prose",
        "--workload",
        help=f"{use}: prose (default, the seed's method), multi-turn, shared-prefix or "
        "unique-prefix; NAME@VERSION for an older version; dataset:FILE or "
        f"dataset:hf:OWNER/NAME@COMMIT:PATH sends a ShareGPT-layout dataset's prompts{also}.",
    )


DatasetSizeOption: Any = typer.Option(
    64, "--dataset-size", min=1, help="--workload dataset:…: prompts sampled."
)
SeedOption: Any = typer.Option(0, "--seed", help="--workload dataset:…: the sample's seed.")
MinPromptCharsOption: Any = typer.Option(
    1, "--min-prompt-chars", min=1, help="--workload dataset:…: shorter prompts dropped."
)
MaxPromptCharsOption: Any = typer.Option(
    None, "--max-prompt-chars", min=1, help="--workload dataset:…: longer prompts dropped."
)
ConcurrencyOption: Any = typer.Option(
    None, "--concurrency", help="Concurrency levels, e.g. 1,4,8 (default: the profile's)."
)


def _profile_value(flag: str, least: float, what: str) -> Any:
    """An option that replaces the profile's value; left out, the profile's holds."""
    return typer.Option(None, flag, min=least, help=f"{what} (default: the profile's).")


MaxTokensOption = _profile_value("--max-tokens", 1, "Reply length")
RequestsOption = _profile_value(
    "--requests", 1, "Burst mode: requests per level, in each repeat of it"
)
WarmupOption = _profile_value("--warmup", 0, "Warmup requests before measuring")
StallTimeoutOption = _profile_value(
    "--stall-timeout", 0.1, "Seconds of silence that fail a request"
)
ClientOption: Any = typer.Option(
    "auto",
    "--client",
    help="Which client streams the requests: compiled (C reader, kernel timestamps), "
    "python, or auto (compiled where built and the URL is http).",
)


def _repeat_option(default: float | None, flag: str, least: float, what: str, unset: str) -> Any:
    """A repeat option: ``unset`` tells what leaving it out means where it has no default."""
    return typer.Option(default, flag, min=least, help=what + (unset if default is None else "."))


_IMPLIES = "; implies --ci-target 2 when it is not given."


def ci_target_option(default: float | None = None) -> Any:
    """``--ci-target``, off unless ``default``."""
    return _repeat_option(
        default,
        "--ci-target",
        0.01,
        "Repeat each level (whole waves) until the 95 % confidence interval of its aggregate "
        "and median per-request rate is within this many percent, e.g. 2",
        " (default: each level once, no interval).",
    )


def max_repeats_option(default: int | None = None) -> Any:
    """``--max-repeats``."""
    return _repeat_option(
        default, "--max-repeats", 3, "Cap on a level's repeats", " (default 10)" + _IMPLIES
    )


def max_level_s_option(default: float | None = None) -> Any:
    """``--max-level-seconds``."""
    return _repeat_option(
        default, "--max-level-seconds", 0.1, "Cap on a level's seconds of repeats", _IMPLIES
    )


def request_from(model: type[M], values: dict[str, Any], **given: Any) -> M:
    """``model`` from a command's parameters (``locals()`` as the command starts): each field
    takes the parameter of its name, since the options are named as the fields; ``given`` wins,
    for a value the command converts or names otherwise."""
    return model(**{k: v for k, v in values.items() if k in model.model_fields} | given)
