"""needle and agree against the real embedded llama.cpp server (SmolLM2-135M, 2048 context).

The model is tiny: it may well fail to retrieve the facts or answer the questions. These tests
assert that the results are correct evidence of what it did, not that it passes.
"""

from __future__ import annotations

import json
import re

import pytest

from rigbook.quality import result as quality_result
from rigbook.quality.extract import extract_letter
from rigbook.quality.stats import mcnemar_exact_p
from rigbook.quality.suite_spec import load_suite
from tests.in_process import rigbook_here as rigbook

# A 2048-token prefill on a shared two-core machine can take minutes.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]
CPU_RECIPE = "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp"
# Enough questions for answers to differ between the sides; every figure is recomputed from them.
AGREE_N = 6


def test_needle_at_the_recipes_context(llama_server, tmp_path):
    url, model_id = llama_server
    out = tmp_path / "needle.json"
    p = rigbook(
        "needle",
        url,
        "--context",
        "max",
        "--recipe",
        CPU_RECIPE,
        "--depths",
        "0,1",
        "--seed",
        "11",
        "--out",
        str(out),
        "--json",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout)["result"] == str(out)
    res = quality_result.load(out)  # hash checked
    c = res.conditions
    assert res.complete and c.endpoint.model == model_id and c.endpoint.recipe == CPU_RECIPE
    # The recipe's 4096 tokens are shared by its 4 slots: one request gets 1024.
    assert (c.served_context, c.served_context_source, c.contexts) == (1024, "recipe", [1024])
    assert c.token_count_source == "tokenizer /extras/tokenize/count" and c.seed == 11
    assert c.sampling.temperature == 0 and c.run.machine.cpus >= 1
    assert [p.depth for p in res.probes] == [0.0, 1.0]
    keys = set()
    for probe in res.probes:
        assert probe.cache == "cold" and probe.error is None
        # The haystack fills the context: the server's own count is close below 1024.
        assert 850 < probe.prompt_tokens <= 1024 - 48, probe.prompt_tokens
        assert probe.prompt_tokens_source == "usage of the same request, unstreamed"
        assert probe.message_tokens < probe.prompt_tokens  # the chat template adds tokens
        assert probe.ttft_ms > 0
        assert probe.prefill_tok_s == pytest.approx(probe.prompt_tokens / (probe.ttft_ms / 1000))
        assert len(probe.facts) == 2 and len(probe.decoys) == 6
        assert probe.truncated is False and probe.prompt_tokens >= probe.expected_prompt_tokens
        codes = re.findall(r"(?<!\d)\d{7}(?!\d)", probe.reply)
        for fact in probe.facts:
            assert fact.in_reply == (fact.value in codes)
            assert not fact.found or fact.in_reply  # found: under its vault's name
        assert probe.passed == (all(f.found for f in probe.facts) and not probe.faults)
        keys |= {f.key for f in probe.facts}
    assert len(keys) == 4  # salted: every probe hides new keys
    (point,) = res.quality_points
    q = point.quality
    assert point.context_len == 1024 and q.test == "needle" and q.n == 2 and q.facts == 2
    assert q.passed == sum(p.passed for p in res.probes) and q.depths == [0.0, 1.0]
    assert q.prompt_tokens == max(p.prompt_tokens for p in res.probes) and q.cache == "cold"


def test_needle_beyond_the_served_context_is_e_context(llama_server, tmp_path):
    url, _ = llama_server
    p = rigbook(
        "needle",
        url,
        "--context",
        "4096",
        "--depths",
        "0.5",
        "--seed",
        "1",
        "--out",
        str(tmp_path / "n.json"),
        "--json",
    )
    assert p.returncode == 2, p.stdout + p.stderr
    error = json.loads(p.stdout)["error"]
    assert error["code"] == "E_CONTEXT" and "4096" in error["message"]


def test_needle_max_without_a_stated_context_is_e_context(llama_server, tmp_path):
    url, _ = llama_server
    p = rigbook("needle", url, "--out", str(tmp_path / "n.json"), "--json")
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "E_CONTEXT"


def test_agree_with_itself(llama_server, tmp_path):
    """One server on both sides. Greedy decoding does not make llama-cpp-python repeat itself
    exactly (B's request finds A's prompt in the server's cache; one of 12 letters differed in a
    run), so the test recomputes every figure from the recorded replies instead of expecting
    100 %."""
    url, model_id = llama_server
    out = tmp_path / "agree.json"
    p = rigbook("agree", url, url, "--n", str(AGREE_N), "--out", str(out), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    res = quality_result.load(out)
    s, c = res.summary, res.conditions
    assert (
        res.complete
        and c.suite.name == "generated"
        and c.suite.version == "v1"
        and c.suite.n == AGREE_N
    )
    assert c.suite.questions_hash == load_suite("generated", AGREE_N, 0).info.questions_hash
    assert c.a.model == c.b.model == model_id and c.sampling.temperature == 0
    assert s.asked == s.counted == AGREE_N and s.failed == 0
    questions = {q.id: q for q in load_suite("generated", AGREE_N, 0).questions}
    for o in res.questions:
        for side in (o.a, o.b):
            assert side.letter == extract_letter(side.reply, len(questions[o.id].options))
            assert side.correct == (side.letter == questions[o.id].answer)
    assert s.a_correct == sum(bool(o.a.correct) for o in res.questions)
    assert s.b_correct == sum(bool(o.b.correct) for o in res.questions)
    differing = [o.id for o in res.questions if o.a.letter != o.b.letter]
    assert s.differing == differing and s.agree == AGREE_N - len(differing)
    only_a = sum(bool(o.a.correct) and not o.b.correct for o in res.questions)
    only_b = sum(bool(o.b.correct) and not o.a.correct for o in res.questions)
    assert (s.only_a_correct, s.only_b_correct) == (only_a, only_b)
    assert s.mcnemar_p == mcnemar_exact_p(only_a, only_b)
    assert [pt.quality.agreement_pct for pt in res.quality_points] == [s.agreement_pct] * 2


def test_agree_reports_a_dead_side(llama_server, tmp_path):
    url, _ = llama_server
    from tests.conftest import free_port

    p = rigbook(
        "agree",
        url,
        f"http://127.0.0.1:{free_port()}",
        "--n",
        "2",
        "--out",
        str(tmp_path / "a.json"),
        "--json",
    )
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "E_CONNECT"
