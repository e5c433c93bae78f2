"""Session workloads against the synthetic server's exact prefix cache: multi-turn conversations
resend every earlier reply, shared prefixes are served from cache, and the engine's readings are
checked against what the workload sent."""

from __future__ import annotations

from itertools import pairwise

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from rigbook.bench.profiles import get_profile
from rigbook.bench.report import write_report
from rigbook.bench.result import RequestRecord
from rigbook.bench.workloads import get_workload
from rigbook.bench.workloads.cache import parse_counters, prefix_cache
from rigbook.bench.workloads.plots import hit_rate
from rigbook.bench.workloads.sessions import Sessions, TurnRequest
from tests.bench.helpers import bench, recorded, rigbook, synthetic_server

# Each prompt token the cache did not hold adds 2 ms to the TTFT: a 600-word document is 1.2 s.
CACHED = "--rate 400 --falloff 0 --prefix-cache --prefill-ms-per-token 2"


@pytest.fixture(scope="module")
def cached_url():
    with synthetic_server(CACHED) as url:
        yield url


def _by_user(records: list[RequestRecord]) -> dict[int, list[RequestRecord]]:
    users: dict[int, list[RequestRecord]] = {}
    for r in sorted(records, key=lambda r: (r.user, r.turn)):
        assert r.user is not None
        users.setdefault(r.user, []).append(r)
    return users


def test_multi_turn_resends_the_conversation_and_later_turns_hit_the_cache(cached_url, tmp_path):
    httpx.post(cached_url + "/_reset")
    result = bench(
        cached_url,
        tmp_path / "r.json",
        profile="quick",
        concurrency=[3],
        workload="multi-turn",
        warmup=1,
    )
    (cell,) = result.cells
    assert cell.valid and cell.requests_planned == 12 and cell.metrics.requests_ok == 12
    assert cell.workload == get_workload("multi-turn").ref().key()
    users = _by_user(cell.requests)
    assert sorted(users) == [0, 1, 2]
    for turns in users.values():
        assert [r.turn for r in turns] == [1, 2, 3, 4]
        # A session's first turn starts with its own tag: nothing cached.
        assert turns[0].cached_prompt_tokens == 0
        for before, now in pairwise(turns):
            # The exact truth: the whole conversation so far, the reply included, was resent
            # and the cache held all of it; only the new message was not cached.
            assert now.cached_prompt_tokens == before.prompt_tokens + before.output_tokens
            assert now.prompt_tokens > now.cached_prompt_tokens
    # The server's own record says the same (the warmup's prose request first).
    served = sorted(
        (x["prompt_tokens"], x["cached_tokens"]) for x in recorded(cached_url)[1:] if x["completed"]
    )

    assert served == sorted((r.prompt_tokens, r.cached_prompt_tokens) for r in cell.requests)
    # Per turn and per cell.
    assert [t.turn for t in cell.turns] == [1, 2, 3, 4]
    assert all(t.requests == 3 for t in cell.turns)
    first, *later = cell.turns
    assert first.cached_prompt_tokens.max == 0
    for t in later:
        assert t.cached_prompt_tokens.min and t.cached_prompt_tokens.min > 0
        assert t.ttft_ms_per_prompt_token < first.ttft_ms_per_prompt_token
    cache = cell.prefix_cache
    assert cache is not None and cache.responses == cache.requests == 12
    assert cache.cached_prompt_tokens == sum(r.cached_prompt_tokens or 0 for r in cell.requests)
    # vLLM-named counters over the cell agree with the responses.
    assert cache.engine_queries == cache.prompt_tokens
    assert cache.engine_hits == cache.cached_prompt_tokens
    assert cache.cold_requests == 3 and cache.cold_cached_max == 0 and not cache.contradictions
    assert not any(
        w.code in ("W_PREFIX_CACHE_CHECK", "W_PREFIX_CACHE_NONE") for w in result.warnings
    )
    # The report draws TTFT by turn and the hit rate (a prose result's has no such chart).
    written = write_report(result, tmp_path / "report", "md")
    assert (tmp_path / "report" / "turns.png") in written.plots
    page = written.report.read_text()
    assert "turns.png" in page and "workload: **multi-turn v1**" in page
    assert "| 3 | 4 | 3 |" in page  # concurrency 3, turn 4, 3 requests: the per-turn table
    assert hit_rate(cell) == cache.hit_rate


def _shared_prefix_cell(url, out, workload):
    result = bench(url, out, profile="quick", concurrency=[3], workload=workload)
    (cell,) = result.cells
    assert cell.valid and cell.metrics.requests_ok == 6
    return result, cell


def test_a_shared_prefix_is_served_from_cache_and_a_unique_one_is_not(cached_url, tmp_path):
    shared, s_cell = _shared_prefix_cell(cached_url, tmp_path / "s.json", "shared-prefix")
    unique, u_cell = _shared_prefix_cell(cached_url, tmp_path / "u.json", "unique-prefix")
    # The system message (a tag of the group, a line, the document) is what users share.
    quick = get_profile("quick")
    system = len(Sessions(get_workload("shared-prefix"), quick, "m", 8).system(0, 0).split())
    assert system > get_workload("shared-prefix").prefix_words
    first = sorted(r.cached_prompt_tokens for r in s_cell.requests if r.turn == 1)
    # One user's first question took the document in; the others found it cached.
    assert first == [0, system, system]
    assert all(r.cached_prompt_tokens == system for r in s_cell.requests if r.turn == 2)
    # Unique documents: a user's first question is cold, their second finds their own document.
    assert all(r.cached_prompt_tokens == 0 for r in u_cell.requests if r.turn == 1)
    assert all(r.cached_prompt_tokens == system for r in u_cell.requests if r.turn == 2)
    assert u_cell.prefix_cache and u_cell.prefix_cache.cold_requests == 3
    assert s_cell.prefix_cache and u_cell.prefix_cache
    assert s_cell.prefix_cache.hit_rate > u_cell.prefix_cache.hit_rate
    # The TTFT shows it: the shared document's first turn mostly skips the prefill.
    assert s_cell.turns[0].ttft_ms.p50 < u_cell.turns[0].ttft_ms.p50
    assert shared.conditions.workload != unique.conditions.workload


def test_no_reading_from_the_engine_is_warned(tmp_path):
    with synthetic_server("--rate 400 --falloff 0") as url:
        result = bench(
            url, tmp_path / "r.json", profile="quick", concurrency=[1], workload="shared-prefix"
        )
    assert result.cells[0].prefix_cache and result.cells[0].prefix_cache.responses == 0
    assert any(w.line.startswith("W_PREFIX_CACHE_NONE: cell 0") for w in result.warnings)


def _record(index: int, turn: int, prompt: int, cached: int | None) -> RequestRecord:
    return RequestRecord(
        cell=0,
        index=index,
        prompt_index=index,
        sent_s=0.0,
        first_token_s=0.1,
        prompt_tokens=prompt,
        token_source="server_continuous",
        ok=True,
        user=index,
        turn=turn,
        cached_prompt_tokens=cached,
    )


def test_readings_that_contradict_the_workload_are_found():
    records = [
        _record(0, 1, 40, 3),  # the template's opening: allowed
        _record(1, 1, 40, 30),  # a cold turn served from cache
        _record(2, 2, 90, 95),  # more cached than the prompt held
        _record(3, 2, 90, 77),
    ]
    cache = prefix_cache(records, cold={1}, cold_head_tokens=8, before=None, after=None)
    assert cache.cold_requests == 2 and cache.cold_cached_max == 30
    assert len(cache.contradictions) == 2
    assert "request 1 (user 1, turn 1) is cold" in cache.contradictions[1]
    assert "95 of its 90" in cache.contradictions[0]
    assert cache.hit_rate == (3 + 30 + 95 + 77) / (40 + 40 + 90 + 90)


def test_vllm_counters_are_read_however_the_page_spells_their_type():
    for type_name in ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries"):
        page = (
            f"# TYPE {type_name} counter\n"
            'vllm:prefix_cache_queries_total{engine="0",model_name="m"} 120.0\n'
            'vllm:prefix_cache_queries_total{engine="1",model_name="m"} 30.0\n'
            "# TYPE vllm:prefix_cache_hits_total counter\n"
            'vllm:prefix_cache_hits_total{engine="0",model_name="m"} 64.0\n'
        )
        counters = parse_counters(text_string_to_metric_families(page))
        assert counters is not None and (counters.queries, counters.hits) == (150.0, 64.0)
    assert parse_counters(text_string_to_metric_families("# TYPE x counter\nx_total 1\n")) is None


def test_a_response_says_its_cached_tokens_in_usage_or_timings():
    raw = TurnRequest(0, 0)
    assert raw.cached_tokens() is None
    raw.cache_n = 12
    assert raw.cached_tokens() == 12
    raw.final_usage = {"prompt_tokens": 40, "prompt_tokens_details": {"cached_tokens": 30}}
    assert raw.cached_tokens() == 30


def test_only_a_sessions_first_turn_without_a_shared_document_is_cold():
    quick = get_profile("quick")
    chat = Sessions(get_workload("multi-turn"), quick, "m", 8)
    assert chat.cold(0) and not chat.cold(1)
    assert not Sessions(get_workload("shared-prefix"), quick, "m", 8).cold(0)
    assert Sessions(get_workload("unique-prefix"), quick, "m", 8).cold(0)
    # Every user's text starts with a tag of its own; a group's document is one text.
    shared = Sessions(get_workload("shared-prefix"), quick, "m", 8)
    assert shared.system(0, 0) == shared.system(0, 1) != shared.system(1, 0)
    assert chat.system(0, 0).split()[0] != chat.system(0, 1).split()[0]


def test_sessions_have_no_sustained_mode(cached_url, tmp_path):
    done = rigbook(
        "bench",
        cached_url,
        "--workload",
        "multi-turn",
        "--duration",
        "5",
        "--out",
        str(tmp_path / "r.json"),
    )
    assert done.returncode == 2 and "E_INPUT" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
