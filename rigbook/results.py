"""One loader for the files users hand back: `rigbook report`, `compare` and `publish`.

A file is read once (:func:`rigbook.result_file.read_file`), its ``kind`` picks the model of a
pydantic discriminated union, and its hash is checked. Each model carries its ``kind`` as a
literal field, so the union needs no sniffing of its own. Besides the measurements (bench,
capacity, needle, agree) the union holds the comparison and the reproduction rigbook writes;
their models are leaf modules (:mod:`rigbook.comparison`, :mod:`rigbook.reproduction`) so that
naming them here makes no import cycle with `compare` and `reproduce`, which load through here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError

from rigbook.bench import result as bench
from rigbook.capacity import result as capacity
from rigbook.comparison import Comparison
from rigbook.errors import InputError
from rigbook.quality import result as quality
from rigbook.reproduction import Reproduction
from rigbook.result_file import ResultFile, edited, invalid, read_file

REPRODUCTION_KIND: Final = "rigbook.reproduction"
COMPARISON_KIND: Final = "rigbook.compare"

# What `report` and `compare` read: a run's measurements.
Measured = bench.BenchResult | capacity.CapacityResult | quality.NeedleResult | quality.AgreeResult
AnyResult = Annotated[
    bench.BenchResult
    | capacity.CapacityResult
    | quality.NeedleResult
    | quality.AgreeResult
    | Comparison
    | Reproduction,
    Field(discriminator="kind"),
]


class _Any(RootModel[AnyResult]):
    """The union as a model: what validates a file's JSON by its kind."""


# The documents that are no measurement: named when one is given where a measurement is read.
OTHER_KINDS: Final = {
    REPRODUCTION_KIND: "a reproduction (`rigbook publish` takes it)",
    COMPARISON_KIND: "a comparison (`rigbook compare --json` or `rigbook reproduce` wrote it)",
}
RESULT_KINDS: Final = frozenset(
    {
        bench.BENCH_KIND,
        capacity.CAPACITY_KIND,
        quality.NEEDLE_KIND,
        quality.AGREE_KIND,
        *OTHER_KINDS,
    }
)


class LoadedResult(BaseModel):
    """A result file, read once, and the result it holds."""

    model_config = ConfigDict(frozen=True)

    file: ResultFile
    result: AnyResult

    @property
    def path(self) -> Path:
        return self.file.path


def is_result(file: ResultFile) -> bool:
    """True when ``file`` declares one of the kinds the union holds (not yet validated)."""
    return file.kind in RESULT_KINDS


def _carries_own_hash(file: ResultFile, result: AnyResult) -> bool:
    # bench and capacity hash the JSON as written, so results of an older version still load
    if isinstance(result, bench.BenchResult):
        return bench.hash_matches(file.data)
    if isinstance(result, capacity.CapacityResult):
        return capacity.hash_matches(file.data)
    if isinstance(result, Comparison | Reproduction):
        return True  # written for reading, not as evidence: they carry no hash
    return quality.hash_matches(result)


def validate(file: ResultFile) -> LoadedResult:
    """The document ``file`` holds, by its ``kind``; ``E_RESULT_INVALID`` for any other file, a
    malformed document or a result whose hash does not match its content."""
    if not is_result(file):
        kind = file.kind
        if kind is None:
            said = f"{file.path} declares no kind: it is no result rigbook wrote"
        else:
            said = f"{file.path} is of kind {kind!r}, not a result rigbook reads"
        raise InputError("E_RESULT_INVALID", said)
    try:
        result = _Any.model_validate(file.data).root
    except ValidationError as exc:
        raise invalid(file, f"a valid {file.kind}", exc) from None
    if not _carries_own_hash(file, result):
        raise edited(file)
    return LoadedResult(file=file, result=result)


def measured(loaded: LoadedResult) -> Measured:
    """The measurement ``loaded`` holds; ``E_RESULT_INVALID`` for a comparison or a reproduction."""
    result = loaded.result
    if isinstance(result, Comparison | Reproduction):
        raise InputError(
            "E_RESULT_INVALID",
            f"{loaded.path} is {OTHER_KINDS[result.kind]}, not a measured result",
        )
    return result


def load_result(path: Path | str) -> LoadedResult:
    """Read ``path`` once and validate the result it holds (:func:`validate`)."""
    return validate(read_file(path))
