"""The capacity result file: every committed one loads, its hash is checked on the file as written,
and it keeps every probe and the SLO."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigbook.capacity.result import CAPACITY_KIND, hash_as_written, load_capacity
from rigbook.capacity.slo import parse_slo
from rigbook.codes import CODES, Code
from rigbook.errors import InputError
from tests.result_files import committed

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
COMMITTED = committed(CAPACITY_KIND)


def test_there_are_committed_capacity_results():
    # vLLM CPU (three runs) and the llama-server embedded default (one), per docs/capacity.md.
    folders = {p.relative_to(FIXTURES).parts[:2] for p in COMMITTED}
    assert ("capacity", "vllm-cpu") in folders and ("capacity", "llama-server") in folders
    assert len(COMMITTED) >= 4


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_capacity_result_loads(path):
    result = load_capacity(path)
    # The SLO as written, and every probe with a reading of every term.
    assert result.slo == parse_slo(result.slo.text)
    assert result.probes and len(result.probes) == len(result.bench.cells)
    names = [t.name for t in result.slo.terms]
    for probe in result.probes:
        assert [r.term for r in probe.readings] == names
        assert result.bench.cells[probe.cell].concurrency == probe.concurrency
    assert result.answer.sentence.startswith("This rig serves ")


def _older_file(tmp_path: Path) -> Path:
    """A committed result with fields that later versions added (with their defaults) taken out,
    and its hash taken over what is left: as an older rigbook wrote it."""
    newest = next(p for p in COMMITTED if "llama-server" in p.parts)
    raw = json.loads(newest.read_text(encoding="utf-8"))
    for probe in raw["probes"]:
        probe.pop("result_file", None)
    for point in raw["bench"]["perf_points"] + raw["perf_points"]:
        point.pop("slo_binding", None)
        point.pop("quality", None)
    raw["bench"].pop("warmup", None)
    raw["content_hash"] = hash_as_written(raw)
    out = tmp_path / "older.json"
    out.write_text(json.dumps(raw, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def test_the_hash_is_checked_on_the_file_as_written(tmp_path):
    older = _older_file(tmp_path)
    result = load_capacity(older)
    # Re-built as this version's model, the result has the later fields back (set to their
    # defaults), so its hash would not match: the file's own JSON is what the hash covers.
    assert result.with_hash().content_hash != result.content_hash
    assert result.probes[0].result_file is None


def test_an_edited_result_is_refused(tmp_path):
    raw = json.loads(COMMITTED[0].read_text(encoding="utf-8"))
    raw["answer"]["users"] += 1
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_capacity(edited)
    assert err.value.code == "E_RESULT_INVALID" and "content_hash" in err.value.message

    raw["content_hash"] = None
    edited.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(InputError):
        load_capacity(edited)


def test_warnings_written_as_text_read_as_records():
    """Capacity results once held warnings as "CODE: message" strings, their own and their
    bench's: each reads as its coded record, with the registry's remedy."""
    path = FIXTURES / "capacity" / "llama-server" / "per-user-5-ttft-p90-5s" / "capacity.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    result = load_capacity(path)
    assert [w.line for w in result.warnings] == raw["warnings"]
    assert [w.line for w in result.bench.warnings] == raw["bench"]["warnings"]
    assert result.warnings[0].code == Code.W_CLIENT_BOUND
    assert result.warnings[0].remedy == CODES[Code.W_CLIENT_BOUND].remedy
