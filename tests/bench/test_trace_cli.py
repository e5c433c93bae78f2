"""`rigbook bench --workload trace:FILE` and `--workload dataset:FILE` against the synthetic
server, whose own record of when each request arrived is the truth the lag is checked on."""

from __future__ import annotations

import json

import httpx
import pytest

from rigbook.bench.result import load_result
from rigbook.codes import CODES, Code
from tests.bench.helpers import recorded, synthetic_server
from tests.in_process import rigbook_here as rigbook

HOP_S = 0.5


@pytest.fixture(scope="module")
def url():
    # Fast replies: the replay's load stays low, so what is tested is the schedule.
    with synthetic_server("--rate 2000 --ttft 0.002 --tokens-per-chunk 4") as u:
        yield u


def _mooncake(n: int, gap_ms: int) -> str:
    """Mooncake-layout rows; each request's input length is its own, so the server's record
    tells which request it was."""
    rows = []
    for i in range(n):
        ids = [1, 2] if i % 3 else [1, 3, 4]
        rows.append(
            json.dumps(
                {
                    "timestamp": i * gap_ms,
                    "input_length": 61 + i,
                    "output_length": 4 + i % 5,
                    "hash_ids": ids,
                }
            )
        )
    return "\n".join(rows) + "\n"


def _bench(url: str, out, *options: str):
    args = ["bench", url, "--model", "synthetic", "--profile", "quick", "--warmup", "0"]
    return rigbook(*args, "--out", str(out), "--json", *options)


def _check_replay(url, trace_text: str, n: int, speed: float, tmp_path):
    file = tmp_path / "trace.jsonl"
    file.write_text(trace_text)
    httpx.post(url + "/_reset")
    p = _bench(
        url,
        tmp_path / "r.json",
        "--workload",
        f"trace:{file}",
        "--block-tokens",
        "20",
        "--speed",
        str(speed),
        "--max-lag-ms",
        "1000",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    result = load_result(tmp_path / "r.json")
    cell = result.cells[0]
    replay = cell.trace
    assert len(result.cells) == 1 and cell.valid and replay is not None
    assert result.conditions.workload is not None
    assert result.conditions.workload.kind == "trace"
    assert cell.workload == result.conditions.workload.key()
    assert replay.requests_sent == n and replay.prompt_tokens_exact == n
    assert replay.lag is not None and replay.lag.requests == n
    # Flagged exactly when its p99 is past the limit (how late it went depends on the machine).
    flagged = any(w.code == "W_TRACE_LAG" for w in result.warnings)
    assert replay.lag.late == (replay.lag.p99_ms > replay.lag.limit_ms) == flagged
    # The server's own record: every request arrived once, with the trace's input length, and
    # the gaps between arrivals are the trace's over the speed, within the stated lag.
    # (The one request of another length measured the chat template's tokens.)
    seen = {r["prompt_tokens"]: r for r in recorded(url) if r["prompt_tokens"] > 60}
    assert len(seen) == n
    first = seen[61]["received"]
    lag = [ms / 1000.0 for ms in replay.lag_ms]
    for i in range(n):
        want = (i * 100 / 1000.0) / speed
        got = seen[61 + i]["received"] - first
        # Each went out its own lag late, and reached the server a loopback hop after that (the
        # hop's bound is loose: a loaded machine may hold a connection a while; a replay off
        # its schedule, at another speed or waiting on earlier replies, is off by seconds).
        assert -(lag[0] + HOP_S) <= got - want <= lag[i] + HOP_S, (i, got, want)
    return result


def test_a_short_mooncake_trace_replays_on_time(url, tmp_path):
    result = _check_replay(url, _mooncake(30, 100), 30, 4.0, tmp_path)
    # Its load is the trace's, not a held concurrency: it claims no perf point.
    assert result.perf_points == []


@pytest.mark.e2e
def test_500_requests_at_fifty_a_second_state_their_lag(url, tmp_path):
    """500 requests, 100 ms apart in the trace, replayed at speed 5: fifty a second for 10 s
    (the scheduler still sleeps between any two). Every request's lag is stated, and its
    percentiles are those of the stated lags. How large it is depends on the machine's load: the
    test prints it, and asserts no bound."""
    result = _check_replay(url, _mooncake(500, 100), 500, 5.0, tmp_path)
    lag = result.cells[0].trace.lag
    print(
        f"trace replay of 500 requests at 50/s: lag p50 {lag.p50_ms:.2f} ms, p99 {lag.p99_ms:.2f} ms"
    )
    lags = result.cells[0].trace.lag_ms
    # each request's lag is kept to the microsecond
    assert len(lags) == 500 and lag.p50_ms <= lag.p99_ms <= lag.max_ms
    assert abs(lag.max_ms - max(lags)) <= 0.0005


def test_a_lag_past_the_limit_is_w_trace_lag(url, tmp_path):
    file = tmp_path / "t.csv"
    file.write_text(
        "at_s,input_tokens,output_tokens\n" + "".join(f"{i / 50},{9 + i},4\n" for i in range(10))
    )
    # A limit of a microsecond: a real wake-up is always later than that.
    p = _bench(url, tmp_path / "r.json", "--workload", f"trace:{file}", "--max-lag-ms", "0.001")
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout)
    (lag,) = [w for w in out["warnings"] if w["code"] == "W_TRACE_LAG"]
    assert lag["message"].startswith("cell 0:") and lag["remedy"] == CODES[Code.W_TRACE_LAG].remedy
    assert load_result(tmp_path / "r.json").cells[0].trace.lag.late
    # The report draws the replay's schedule lag.
    p = rigbook("report", str(tmp_path / "r.json"), "--out", str(tmp_path / "rep"), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    assert str(tmp_path / "rep" / "schedule-lag.png") in json.loads(p.stdout)["plots"]
    assert (tmp_path / "rep" / "schedule-lag.png").stat().st_size > 0


def test_a_bad_trace_row_exits_2_naming_the_line(url, tmp_path):
    file = tmp_path / "bad.jsonl"
    file.write_text(_mooncake(3, 100) + '{"timestamp": 400, "input_length": "many"}\n')
    p = _bench(url, tmp_path / "r.json", "--workload", f"trace:{file}", "--block-tokens", "20")
    assert p.returncode == 2
    err = json.loads(p.stdout)["error"]
    assert err["code"] == "E_TRACE" and f"{file} line 4: input_length 'many'" in err["message"]
    assert "Traceback" not in p.stderr


def test_level_options_cannot_go_with_a_trace(url, tmp_path):
    file = tmp_path / "t.csv"
    file.write_text("at_s,input_tokens,output_tokens\n0,10,4\n")
    for options in (["--concurrency", "4"], ["--duration", "5"], ["--ci-target", "2"]):
        p = _bench(url, tmp_path / "r.json", "--workload", f"trace:{file}", *options)
        assert p.returncode == 2, options
        err = json.loads(p.stdout)["error"]
        assert err["code"] == "E_INPUT" and f"{options[0]} cannot go with a trace" in err["message"]
    assert not (tmp_path / "r.json").exists()


@pytest.fixture(scope="module")
def slow_url():
    # Replies long against any client hiccup, so the cells stay perf points on a loaded machine.
    with synthetic_server("--rate 50 --falloff 0 --tokens-per-chunk 1") as u:
        yield u


def test_a_sharegpt_file_is_sent_as_the_prompts(slow_url, tmp_path):
    url = slow_url
    rows = [
        {
            "conversations": [
                {"from": "human", "value": f"word{i} " * (3 + i)},
                {"from": "gpt", "value": "ok"},
            ]
        }
        for i in range(12)
    ]
    file = tmp_path / "sg.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    httpx.post(url + "/_reset")
    p = _bench(
        url,
        tmp_path / "r.json",
        "--workload",
        f"dataset:{file}",
        "--dataset-size",
        "4",
        "--seed",
        "3",
        "--max-prompt-chars",
        "80",
        "--concurrency",
        "2",
        "--requests",
        "4",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    result = load_result(tmp_path / "r.json")
    w = result.conditions.workload
    assert w is not None and w.kind == "dataset" and w.name == "dataset:sg.jsonl"
    # Its perf points say which workload they hold, not the profile's prose.
    assert result.perf_points
    assert {pt.conditions.workload for pt in result.perf_points} == {"dataset:sg.jsonl"}
    # The prompts the server saw are the sampled rows' (its token count is their words, and the
    # two of the tag the quick profile puts before each prompt to keep it unique).
    allowed = {3 + i + 2 for i in range(12) if len(f"word{i} " * (3 + i)) <= 80}
    sent = {r["prompt_tokens"] for r in recorded(url)}
    assert sent and sent <= allowed
    # Another seed is another workload: compare would refuse to set the two side by side.
    p2 = _bench(
        url, tmp_path / "r2.json", "--workload", f"dataset:{file}", "--dataset-size", "4",
        "--seed", "4", "--max-prompt-chars", "80", "--concurrency", "1", "--requests", "1",
    )  # fmt: skip
    assert p2.returncode == 0, p2.stdout + p2.stderr
    other = load_result(tmp_path / "r2.json").conditions.workload
    assert other is not None and other.content_hash != w.content_hash
