"""One loader for result files (rigbook.results): every kind loads from a file read once, by its
``kind``, comparisons and reproductions included; what is no result is E_RESULT_INVALID; `report`,
`compare` and `publish` open a file once."""

from __future__ import annotations

import builtins
import io
import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rigbook.bench.result import BENCH_KIND, BenchResult
from rigbook.capacity.result import CAPACITY_KIND, CapacityResult
from rigbook.cli.app import app
from rigbook.compare.sources import load_source
from rigbook.comparison import Comparison
from rigbook.errors import InputError
from rigbook.hub import publish
from rigbook.hub.publish import publish_file
from rigbook.hub.schemas import ReproductionAccepted, ResultAccepted
from rigbook.quality.result import AgreeResult, NeedleResult
from rigbook.reproduce import publish as reproduce_publish
from rigbook.reproduction import Reproduction
from rigbook.results import load_result
from tests.compare.bench_results import write_result
from tests.compare.test_seed_cases import SEED_TP2, SEED_TP4
from tests.quality.test_compare import _agree, _needle
from tests.reproduce.test_publish import folder
from tests.result_files import committed

runner = CliRunner()
CAPACITY = committed(CAPACITY_KIND)[0]


@pytest.mark.parametrize(
    "path", committed(BENCH_KIND) + committed(CAPACITY_KIND), ids=lambda p: p.parent.name
)
def test_every_committed_result_loads_as_its_kind(path: Path) -> None:
    loaded = load_result(path)
    kind = json.loads(path.read_text(encoding="utf-8"))["kind"]
    assert loaded.result.kind == kind and loaded.path == path
    assert isinstance(loaded.result, BenchResult if kind == BENCH_KIND else CapacityResult)
    assert loaded.file.written == path.read_bytes()


def test_needle_and_agree_results_load_as_theirs(tmp_path: Path) -> None:
    needle = _needle(tmp_path / "needle.json", 4096, [0.5], [True])
    assert isinstance(load_result(needle).result, NeedleResult)
    assert isinstance(load_result(_agree(tmp_path / "agree.json")).result, AgreeResult)


def _comparison(tmp_path: Path) -> Path:
    """What `rigbook compare --json` prints, saved to a file."""
    out = runner.invoke(app, ["compare", SEED_TP2, SEED_TP4, "--json"])
    assert out.exit_code == 0, out.output
    return _write(tmp_path / "comparison.json", out.output)


def test_a_comparison_and_a_reproduction_load_as_theirs_read_once(
    tmp_path: Path, opened: Counter[Path]
) -> None:
    comparison, reproduction = _comparison(tmp_path), folder(tmp_path)
    opened.clear()
    loaded, rep = load_result(comparison), load_result(reproduction)
    assert opened[comparison.resolve()] == 1 and opened[reproduction.resolve()] == 1
    assert isinstance(loaded.result, Comparison) and loaded.result.pairs
    assert isinstance(rep.result, Reproduction) and rep.path == reproduction
    # the model holds the document as written: dumped again, it is the same JSON
    assert loaded.result.model_dump(mode="json") == json.loads(comparison.read_text())
    assert rep.result.model_dump(mode="json") == json.loads(reproduction.read_text())


def test_report_and_compare_refuse_what_is_no_measurement(tmp_path: Path) -> None:
    comparison, reproduction = _comparison(tmp_path), folder(tmp_path)
    out = runner.invoke(app, ["report", str(comparison), "--json"])
    error = json.loads(out.output)["error"]
    assert error["code"] == "E_RESULT_INVALID" and "is a comparison" in error["message"]
    out = runner.invoke(app, ["report", str(reproduction), "--json"])
    assert "is a reproduction" in json.loads(out.output)["error"]["message"]
    with pytest.raises(InputError) as caught:
        load_source(str(comparison))
    assert caught.value.code == "E_RESULT_INVALID" and "is a comparison" in caught.value.message


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _edited(tmp_path: Path) -> Path:
    raw = json.loads(write_result(tmp_path / "good.json", energy=None).read_text())
    raw["perf_points"][0]["decode_tok_s"] = 9999.0
    return _write(tmp_path / "edited.json", json.dumps(raw))


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda d: d / "missing.json", "cannot read"),
        (lambda d: _write(d / "cut.json", '{"kind": "rigbook.bench.result", '), "is not JSON"),
        (lambda d: _write(d / "deep.json", "[" * 100_000), "is not JSON"),
        (lambda d: _write(d / "recipe.json", '{"slug": "x"}'), "declares no kind"),
        (
            lambda d: _write(d / "other.json", '{"kind": "rigbook.other"}'),
            "of kind 'rigbook.other'",
        ),
        (lambda d: _write(d / "rep.json", '{"kind": "rigbook.reproduction"}'), "problems"),
        (lambda d: _write(d / "cmp.json", '{"kind": "rigbook.compare"}'), "problems"),
        (lambda d: _write(d / "bad.json", '{"kind": "rigbook.bench.result"}'), "problems"),
        (_edited, "content_hash does not match"),
    ],
    ids=[
        "missing",
        "not-json",
        "too-deep",
        "no-kind",
        "unknown",
        "reproduction",
        "comparison",
        "malformed",
        "edited",
    ],
)
def test_what_is_no_result_is_a_coded_error(
    tmp_path: Path, make: Callable[[Path], Path], said: str
) -> None:
    with pytest.raises(InputError) as caught:
        load_result(make(tmp_path))
    assert caught.value.code == "E_RESULT_INVALID" and said in caught.value.message
    assert caught.value.remedy  # the registry's: give the file rigbook wrote, unmodified


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Counter[Path]:
    """How often each file was opened, through open() or pathlib (which calls io.open)."""
    counts: Counter[Path] = Counter()
    real = io.open

    def counting(file, *args, **kwargs):
        if isinstance(file, str | os.PathLike):
            counts[Path(file).resolve()] += 1
        return real(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting)
    monkeypatch.setattr(builtins, "open", counting)
    return counts


def test_report_opens_the_result_once(tmp_path: Path, opened: Counter[Path]) -> None:
    for path in (
        write_result(tmp_path / "bench.json", energy=None),
        _needle(tmp_path / "needle.json", 4096, [0.5], [True]),
    ):
        opened.clear()
        out = runner.invoke(app, ["report", str(path), "--out", str(tmp_path / path.stem)])
        assert out.exit_code == 0, out.output
        assert opened[path.resolve()] == 1, path.name


def test_compare_opens_each_source_once(tmp_path: Path, opened: Counter[Path]) -> None:
    sources = [write_result(tmp_path / "bench.json", energy=None), CAPACITY]
    sources.append(_agree(tmp_path / "agree.json"))
    opened.clear()
    for path in sources:
        load_source(str(path), points=False)
    assert [opened[p.resolve()] for p in sources] == [1, 1, 1]


class _Hub:
    """A hub that accepts whatever it is sent."""

    def __init__(self, hub: str, token: str | None) -> None:
        self.base_url = hub

    def publish_result(self, slug: str, body: bytes, signature: object) -> ResultAccepted:
        assert isinstance(body, bytes)
        return ResultAccepted(slug=slug, revision=1, points_added=1, content_hash="x")

    publish_capacity = publish_result

    def publish_reproduction(
        self, slug: str, body: bytes, signature: object
    ) -> ReproductionAccepted:
        return ReproductionAccepted(
            slug=slug, revision=2, reproduced_revision=1, verdict="inconclusive", content_hash="y"
        )


def test_publish_opens_the_file_once(
    tmp_path: Path, opened: Counter[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(publish, "HubClient", _Hub)
    bench = write_result(tmp_path / "bench.json", energy=None)
    opened.clear()
    out = runner.invoke(app, ["publish", str(bench), "--hub", "http://hub", "--no-sign", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["kind"] == "result" and opened[bench.resolve()] == 1
    opened.clear()
    done = publish_file(CAPACITY, "http://hub", None, recipe=None, signing=False)
    assert done.kind == "capacity" and opened[CAPACITY.resolve()] == 1


def test_publish_opens_a_reproduction_and_its_result_once(
    tmp_path: Path, opened: Counter[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reproduce_publish, "HubClient", _Hub)
    document = folder(tmp_path)
    opened.clear()
    out = runner.invoke(app, ["publish", str(document), "--hub", "http://hub", "--no-sign"])
    assert out.exit_code == 0, out.output
    assert "published a reproduction (inconclusive)" in out.output
    assert opened[document.resolve()] == 1
    assert opened[(document.parent / "result.json").resolve()] == 1


@pytest.mark.parametrize("make", [lambda d: _agree(d / "agree.json"), _comparison])
def test_publish_refuses_a_quality_result_and_a_comparison(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Callable[[Path], Path]
) -> None:
    monkeypatch.setattr(publish, "HubClient", _Hub)
    with pytest.raises(InputError, match="a hub does not take") as caught:
        publish_file(make(tmp_path), "http://hub", None, signing=False)
    assert caught.value.code == "E_INPUT"
