"""`reproduce --publish` without an engine: its options checked before anything starts, the verdict in one
word, and a publish the hub does not take losing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigbook.bench.intervals import Interval
from rigbook.recipe import EMBEDDED_SLUG
from rigbook.reproduce.publish import publish_reproduction
from rigbook.reproduce.verdict import overall
from rigbook.reproduction import Reproduction, VerdictRow
from tests.conftest import free_port
from tests.hub.helpers import SMALL_SLUG, make_result
from tests.launch.helpers import rigbook


def row(call: str, claim: float | None = 100.0, low: float = 95.0, high: float = 105.0):
    return VerdictRow(
        concurrency=1,
        rate="per_request_decode",
        claim_tok_s=claim,
        measured_tok_s=(low + high) / 2,
        interval=Interval(n=5, mean=(low + high) / 2, low=low, high=high),
        call=call,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("rows", "verdict"),
    [
        ([row("within spread")], "holds"),
        ([row("real difference", claim=90.0)], "holds"),  # faster than claimed
        ([row("within spread"), row("real difference", claim=120.0)], "does not hold"),
        ([row("real difference", claim=120.0), row("not comparable")], "does not hold"),
        ([row("within spread"), row("not measured")], "inconclusive"),
        ([row("within spread"), row("no interval")], "inconclusive"),
        ([row("no claim", claim=None)], "inconclusive"),
        ([], "inconclusive"),
    ],
)
def test_the_verdict_in_one_word(rows: list[VerdictRow], verdict: str) -> None:
    assert overall(rows) == verdict


def test_publish_needs_a_hub_and_a_token_before_anything_starts() -> None:
    done = rigbook("reproduce", EMBEDDED_SLUG, "--yes", "--publish")
    assert done.returncode == 2
    assert "error[E_INPUT]" in done.stderr and "--publish needs --hub" in done.stderr
    done = rigbook(
        "reproduce",
        EMBEDDED_SLUG,
        "--yes",
        "--publish",
        "--hub",
        "http://127.0.0.1:9",
        env={"RIGBOOK_HUB_TOKEN": ""},
    )
    assert done.returncode == 2
    assert "--publish needs an API token" in done.stderr
    assert json.loads(rigbook("status", "--json").stdout) == []


def test_a_dry_run_says_it_would_publish() -> None:
    done = rigbook(
        "reproduce",
        EMBEDDED_SLUG,
        "--dry-run",
        "--publish",
        "--hub",
        "http://127.0.0.1:9",
        "--token",
        "t",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)["then"]
    assert any(s.startswith("publish the result, then the verdict") for s in steps), steps


def folder(tmp_path: Path, **changes) -> Path:
    """A reproduction folder as `rigbook reproduce` leaves it: result.json and reproduction.json."""
    out = tmp_path / "rep"
    out.mkdir()
    result = make_result(SMALL_SLUG)
    (out / "result.json").write_text(result.model_dump_json(indent=2))
    rep = Reproduction(
        recipe=SMALL_SLUG,
        recipe_hash="sha256:" + "0" * 64,
        folder=str(out),
        url="http://127.0.0.1:1/v1",
        profile="seed",
        levels=[1, 4],
        max_tokens=400,
        ci_target_pct=2.0,
        assumed=[],
        rows=[],
        result=str(out / "result.json"),
        report=str(out / "report" / "report.md"),
        **changes,
    )
    (out / "reproduction.json").write_text(rep.model_dump_json(indent=2))
    return out / "reproduction.json"


def test_a_hub_that_does_not_answer_loses_nothing(tmp_path: Path) -> None:
    path = folder(tmp_path)
    hub = f"http://127.0.0.1:{free_port()}"
    done = rigbook("publish", str(path), "--hub", hub, "--token", "not-a-real-token", "--json")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "E_CONNECT"
    assert error["message"].endswith(
        f"nothing is lost: the result, comparison and report stay in {path.parent}"
    )
    assert error["remedy"].endswith(
        f"Then publish the folder again: rigbook publish {path} --hub {hub}"
    )
    assert sorted(p.name for p in path.parent.iterdir()) == ["reproduction.json", "result.json"]


@pytest.mark.parametrize(
    "changes", [{"cut_short": True}, {"verdict_error": {"code": "E_BENCH_INVALID", "message": "x"}}]
)
def test_a_bench_that_does_not_count_is_not_published(tmp_path: Path, changes: dict) -> None:
    path = folder(tmp_path, **changes)
    rep = Reproduction.model_validate_json(path.read_text())
    with pytest.raises(Exception, match="does not count") as caught:
        publish_reproduction(rep, f"http://127.0.0.1:{free_port()}", "t")
    assert getattr(caught.value, "code", None) == "E_INPUT"
