"""compare reads quality points like for like, and reads the seed record's prose claims."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from rigbook.compare import compare_refs
from rigbook.compare.sources import load_source
from rigbook.quality.needle import quality_points as needle_points
from rigbook.quality.result import (
    Endpoint,
    Fact,
    NeedleConditions,
    NeedleProbe,
    NeedleResult,
    Sampling,
    run_info,
    save,
)
from tests.conftest import SEED_RECORD


def _needle(path, context: int, depths: list[float], passed: list[bool]):
    cond = NeedleConditions(
        endpoint=Endpoint(url="http://127.0.0.1:8080", model="m", engine="llama.cpp"),
        served_context=context,
        served_context_source="recipe",
        contexts=[context],
        depths=depths,
        facts=2,
        seed=5,
        haystack="needle haystack v1",
        token_count_source="tokenizer /tokenize",
        sampling=Sampling(max_tokens=48),
        run=run_info(),
    )
    probes = [
        NeedleProbe(
            context=context,
            depth=d,
            cache="cold",
            salt="00",
            passed=ok,
            prompt_tokens=context - 120,
            ttft_ms=900.0,
            prefill_tok_s=(context - 120) / 0.9,
            facts=[
                Fact(key="K", value="1234567", found=ok),
                Fact(key="L", value="7654321", found=ok),
            ],
        )
        for d, ok in zip(depths, passed, strict=True)
    ]
    result = NeedleResult(conditions=cond, probes=probes, complete=True)
    result.quality_points = needle_points(result, f"rigbook needle result {path.name}")
    save(result, path)
    return path


def test_seed_claims_are_read_not_dropped():
    source = load_source(str(SEED_RECORD))
    assert not any("Salted-needle" in s for s in source.skipped)
    by_test = {}
    for p in source.quality:
        by_test.setdefault(p.quality.test, []).append(p)
    (needle,) = by_test["needle"]
    q = needle.quality
    assert (q.prompt_tokens, q.facts, q.passed, q.n, q.cache) == (1_040_355, 2, 1, 1, "cold")
    assert needle.ttft_ms == 249_000 and needle.context_len == 1_048_576
    assert needle.conditions.gpu_count == 2 and q.evidence.startswith("notes: Salted-needle")
    paired, plain = by_test["multiple_choice"]
    assert (
        paired.quality.n,
        paired.quality.passed,
        paired.quality.mcnemar_p,
        paired.quality.reference,
    ) == (200, 168, 1.0, "TP4")
    assert (plain.quality.n, plain.quality.accuracy_pct, plain.quality.passed) == (1000, 82.6, None)


def test_our_needle_against_the_seeds_says_why_not(tmp_path):
    ours = _needle(tmp_path / "needle.json", 2048, [0, 0.5, 1], [True, False, True])
    comparison = compare_refs([str(ours), str(SEED_RECORD)])
    (pair,) = [p for p in comparison.pairs[0].quality if p.test == "needle"]
    assert pair.verdict == "not comparable"
    messages = " | ".join(r.message for r in pair.reasons)
    assert "context length differs: 2048 vs 1048576" in messages
    assert "haystack unknown on B" in messages and "depths unknown on B" in messages
    assert pair.a_score == "2/3 probes passed at 1,928 prompt tokens"
    assert pair.b_score == "1/1 probes passed at 1,040,355 prompt tokens"


def test_like_for_like_needles_are_comparable_and_others_not(tmp_path):
    a = _needle(tmp_path / "a.json", 2048, [0, 1], [True, True])
    b = _needle(tmp_path / "b.json", 2048, [0, 1], [True, False])
    c = _needle(tmp_path / "c.json", 2048, [0.5], [True])
    comparison = compare_refs([str(a), str(b), str(c)])
    verdicts = {(p.a, p.b): p.quality[0] for p in comparison.pairs}
    same = verdicts[("a.json", "b.json")]
    assert same.verdict == "comparable" and same.reasons == []
    assert (same.a_score, same.b_score) == (
        "2/2 probes passed at 1,928 prompt tokens",
        "1/2 probes passed at 1,928 prompt tokens",
    )
    other = verdicts[("a.json", "c.json")]
    assert other.verdict == "not comparable"
    assert {r.condition for r in other.reasons} == {"depths", "probe count"}


def test_compare_cli_prints_the_quality_section(tmp_path):
    ours = _needle(tmp_path / "needle.json", 2048, [0.5], [True])
    p = subprocess.run(
        [sys.executable, "-m", "rigbook", "compare", str(ours), str(SEED_RECORD), "--format", "md"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "**quality, like for like**" in p.stdout
    assert (
        "needle: A needle, context 2048: 1/1 probes passed" in p.stdout
        and "not comparable" in p.stdout
    )
    j = subprocess.run(
        [sys.executable, "-m", "rigbook", "compare", str(ours), str(SEED_RECORD), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    value = json.loads(j.stdout)
    assert value["sources"][0]["kind"] == "quality_result" and value["pairs"][0]["quality"]


def test_an_edited_needle_result_is_refused(tmp_path):
    path = _needle(tmp_path / "n.json", 2048, [0.5], [False])
    data = json.loads(path.read_text())
    data["probes"][0]["passed"] = True
    path.write_text(json.dumps(data))
    p = subprocess.run(
        [sys.executable, "-m", "rigbook", "compare", str(path), str(SEED_RECORD), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "E_RESULT_INVALID"


def test_compare_shows_agreement_and_mcnemar_p(tmp_path):
    comparison = compare_refs([str(_agree(tmp_path / "agree.json")), str(SEED_RECORD)])
    scores = [(p.a_score, p.b_score) for p in comparison.pairs[0].quality]
    ours = "3/4 right (75.0%), agreement 50.0%, exact McNemar p=1 vs B at http://b"
    assert (ours, "168/200 right (84.0%), exact McNemar p=1 vs TP4") in scores
    assert (ours, "82.6% (1000q)") in scores
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "rigbook",
            "compare",
            str(tmp_path / "agree.json"),
            str(SEED_RECORD),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "exact McNemar p=1 vs TP4" in " ".join(p.stdout.split())


def test_recipes_show_lists_the_seeds_quality_claims():
    from rigbook.recipe.load import load_recipe_file

    slug = load_recipe_file(str(SEED_RECORD)).slug
    for args in (["recipes", "show", slug], ["recipe", "show", "--file", str(SEED_RECORD)]):
        p = subprocess.run(
            [sys.executable, "-m", "rigbook", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert p.returncode == 0, p.stderr
        out = p.stdout
        assert "quality claims:" in out
        assert (
            "multiple choice, MMLU-Pro vs TP4: 168/200 right (84.0%), exact McNemar p=1 vs TP4"
            in out
        )
        assert "multiple choice, MMLU-Pro: 82.6% (1000q)" in out
        assert "needle, context 1048576: 1/1 probes passed at 1,040,355 prompt tokens" in out


def _agree(path):
    """An agree result of four questions: each side right on 3, one each only, 2 letters alike."""
    from rigbook.quality.agree import quality_points as agree_points
    from rigbook.quality.agree import summarise
    from rigbook.quality.result import AgreeConditions, AgreeResult, Answer, QuestionOutcome
    from rigbook.quality.suites import make_suite

    def side(letter, gold):
        return Answer(reply=letter, letter=letter, correct=letter == gold)

    rows = [("A", "A", "A"), ("B", "B", "C"), ("C", "D", "C"), ("D", "D", "D")]
    outcomes = [
        QuestionOutcome(id=str(i), gold=g, a=side(a, g), b=side(b, g))
        for i, (g, a, b) in enumerate(rows)
    ]
    suite = make_suite("MMLU-Pro", "v", "x.jsonl", [], "first 4")
    result = AgreeResult(
        conditions=AgreeConditions(
            a=Endpoint(url="http://a", model="A", engine="llama.cpp"),
            b=Endpoint(url="http://b", model="B", engine="llama.cpp"),
            suite=suite.info.model_copy(update={"n": 4}),
            prompt="p",
            extraction="e",
            sampling=Sampling(max_tokens=16),
            run=run_info(),
        ),
        questions=outcomes,
        complete=True,
    )
    result.summary = summarise(outcomes)
    result.quality_points = agree_points(result, path.name)
    save(result, path)
    return path


def test_compare_lists_claims_the_other_side_does_not_measure():
    """The TP4 reference states no quality: the seed's claims are shown on their own."""
    tp4 = "glm-5-3-flash-qad-csf-on-4x-rtx-pro-6000-blackwell-tp4-reference"
    for fmt in ("md", "table"):
        p = subprocess.run(
            [sys.executable, "-m", "rigbook", "compare", str(SEED_RECORD), tp4, "--format", fmt],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert p.returncode == 0, p.stderr
        out = " ".join(p.stdout.split())
        assert (
            "only A states: multiple choice, MMLU-Pro vs TP4: 168/200 right (84.0%), "
            "exact McNemar p=1 vs TP4" in out
        ), fmt
        assert "only A states: needle, context 1048576: 1/1 probes passed" in out
        assert "only B states" not in out
