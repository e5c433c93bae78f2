"""The bench options of `bench`, `capacity` and `reproduce`, made from the request model.

Each option is a :class:`~rigbook.bench.request.MeasureRequest` field carrying a
:class:`~rigbook.bench.request.Flag`: its flag, help (the description), default and floor (the
field's ``ge``) are declared there once, so adding a bench option is one field. AIPerf's CLI is
the model: the command line *is* the request model. :func:`bench_options` puts a typer option for
each field where the command names an ``options`` parameter, and hands the command the values as
:class:`BenchOptions`, which builds the request. A command may change an option's default
(reproduce repeats each level by default) or help, never its flag.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import annotated_types
import typer
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

from rigbook.bench.request import WORKLOAD_FORMS, Flag, MeasureRequest
from rigbook.errors import InputError

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")


def flags(model: type[BaseModel] = MeasureRequest) -> dict[str, Flag]:
    """The fields of ``model`` the command line sets, each with its flag, in field order."""
    found = {}
    for name, info in model.model_fields.items():
        flag = next((m for m in info.metadata if isinstance(m, Flag)), None)
        if flag is not None:
            found[name] = flag
    return found


def workload_help(use: str, also: str) -> str:
    """``--workload``'s help in a command: ``use`` says what it names there, ``also`` adds."""
    return f"{use}: {WORKLOAD_FORMS}; {also}."


class BenchOptions(BaseModel):
    """The bench options a command was given, by field name, as typed: parsed and validated
    only by :meth:`request`, inside the command, so bad input is reported as the command's
    errors are."""

    model_config = ConfigDict(frozen=True)

    values: dict[str, Any]
    source: type[BaseModel] = MeasureRequest

    def request(self, model: type[M], **given: Any) -> M:
        """``model`` from the options and ``given`` (which wins, for a value the command names
        otherwise); ``E_INPUT`` for a value it refuses, naming the flag."""
        known = flags(self.source)
        values = {name: _typed(known[name], value) for name, value in self.values.items()}
        try:
            return model(**(values | given))
        except ValidationError as exc:
            raise _refused(exc, known) from None


def _typed(flag: Flag, value: Any) -> Any:
    """A value as its field takes it: the text of a flag that parses, parsed."""
    return value if flag.parse is None or value is None else flag.parse(value)


def _refused(exc: ValidationError, known: Mapping[str, Flag]) -> InputError:
    lines = []
    for err in exc.errors(include_url=False):
        field = str(err["loc"][0]) if err["loc"] else "(request)"
        what = known[field].name if field in known else field
        lines.append(f"{what} {err.get('input')!r}: {err['msg']}")
    return InputError(
        "E_INPUT",
        lines[0] if len(lines) == 1 else f"{len(lines)} options refused: " + "; ".join(lines),
        "See the command's --help.",
        details=lines,
    )


def _bound(info: FieldInfo, kind: type, attr: str) -> float | None:
    return next((getattr(m, attr) for m in info.metadata if isinstance(m, kind)), None)


def _help(info: FieldInfo, flag: Flag, default: Any) -> str:
    text = info.description or ""
    if default is None and flag.unset:
        return text.removesuffix(".") + flag.unset + "."
    return text


def _parameter(
    name: str, info: FieldInfo, flag: Flag, default: Any, help: str | None
) -> inspect.Parameter:
    floor = flag.min if flag.min is not None else _bound(info, annotated_types.Ge, "ge")
    option = typer.Option(
        default,
        flag.name,
        min=floor,
        max=_bound(info, annotated_types.Le, "le"),
        help=help if help is not None else _help(info, flag, default),
    )
    kind = str | None if flag.parse else info.annotation
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)


def bench_options(
    names: Sequence[str] | None = None,
    *,
    defaults: Mapping[str, Any] | None = None,
    helps: Mapping[str, str] | None = None,
    model: type[BaseModel] = MeasureRequest,
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Give a command the options of ``model``'s flagged fields (``names`` of them, in that
    order; None: all, in field order), in place of its ``options: BenchOptions`` parameter.
    ``defaults`` and ``helps`` change a field's default and help in this command only."""
    known = flags(model)
    chosen = list(names) if names is not None else list(known)
    defaults = defaults or {}
    helps = helps or {}

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        own = inspect.signature(command, eval_str=True)
        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own.parameters.values()]
        at = [p.name for p in params].index("options")
        made = []
        for name in chosen:
            info = model.model_fields[name]
            default = defaults.get(name, info.default)
            made.append(_parameter(name, info, known[name], default, helps.get(name)))
        params[at : at + 1] = made

        @functools.wraps(command)
        def run(**kwargs: Any) -> R:
            values = {name: kwargs.pop(name) for name in chosen}
            return command(**kwargs, options=BenchOptions(values=values, source=model))

        run.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return decorate
