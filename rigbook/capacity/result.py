"""The capacity result file: the SLO, the settings, every probe, the answer and its perf point.

The probes' cells (every request in them) sit in ``bench``, a complete bench result, so what
reads bench results reads them too. ``content_hash`` covers everything else, as a bench result's
does. The file is rewritten after each probe: a crash loses at most the probe in flight, whose
requests are in the journal beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rigbook import hashing
from rigbook.bench.result import BenchResult
from rigbook.capacity.answer import CapacityAnswer
from rigbook.capacity.search import ProbeOutcome, SearchSettings
from rigbook.capacity.slo import Slo
from rigbook.findings import Finding
from rigbook.hashing import content_hash
from rigbook.recipe.schema import PerfPoint
from rigbook.result_file import ResultFile, edited, invalid, read_file

CAPACITY_KIND: Final = "rigbook.capacity.result"


# Fields added after capacity results were first written: left out of the hash while unset, so
# a result written before they existed still matches its hash.
LATER_FIELDS: Final = frozenset({"slo_binding"})


def _without_unset_later(value):
    if isinstance(value, dict):
        return {
            k: _without_unset_later(v)
            for k, v in value.items()
            if not (k in LATER_FIELDS and v is None)
        }
    if isinstance(value, list):
        return [_without_unset_later(v) for v in value]
    return value


class CapacityResult(BaseModel):
    """One `rigbook capacity` run."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    kind: Literal["rigbook.capacity.result"] = CAPACITY_KIND
    slo: Slo
    settings: SearchSettings
    probes: list[ProbeOutcome] = Field(description="Every probe in the order it ran.")
    answer: CapacityAnswer
    perf_points: list[PerfPoint] = Field(
        default_factory=list, description="The users_at_slo point."
    )
    bench: BenchResult = Field(
        description="The probes as cells of one bench run, requests included."
    )
    warnings: list[Finding] = Field(
        default_factory=list,
        description="Coded warnings with their remedies, the probes' own included; results "
        "written before they were records hold 'CODE: message' strings, read as records.",
    )
    load: str | None = Field(
        default=None, description="The machine's load averages when the run ended."
    )
    content_hash: str | None = None

    def hashed_body(self) -> dict:
        body = _without_unset_later(self.model_dump(mode="json", by_alias=True))
        body.pop("content_hash", None)
        return body

    def with_hash(self) -> CapacityResult:
        return self.model_copy(update={"content_hash": content_hash(self.hashed_body())})


def hash_as_written(raw: dict) -> str:
    """The content hash of a capacity result's JSON as it was written (or posted): everything but
    ``content_hash``, later fields left out while unset, as :meth:`CapacityResult.hashed_body`
    does. Read from the file's own JSON, not from a model re-built from it: a field a later
    version added (with its default) to any part of the result would otherwise change the hash
    of every older file."""
    return hashing.hash_as_written(raw, _without_unset_later)


def hash_matches(raw: object) -> bool:
    """True when ``raw`` (a capacity result's JSON) carries the hash of its own content."""
    return hashing.carries_own_hash(raw, _without_unset_later)


def save_capacity(result: CapacityResult, path: Path) -> Path:
    """Write the result (hash set) atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    # pydantic's own encoder: json.dumps with an indent is pure Python, and the file, every
    # request included, is written again after each probe.
    body = result.with_hash().model_dump_json(indent=2, by_alias=True)
    tmp.write_text(body + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def load_capacity(path: Path | str) -> CapacityResult:
    """Read a capacity result; a malformed file or a wrong hash is ``E_RESULT_INVALID``."""
    return capacity_from(read_file(path))


def capacity_from(file: ResultFile) -> CapacityResult:
    """The capacity result ``file`` holds. The hash is checked on the file as written
    (:func:`hash_as_written`), so results written by an older version still load."""
    try:
        result = CapacityResult.model_validate(file.data)
    except ValidationError as exc:
        raise invalid(file, "a capacity result", exc) from None
    if not hash_matches(file.data):
        raise edited(file)
    return result
