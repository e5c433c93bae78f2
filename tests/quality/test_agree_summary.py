"""The agree summary and the reports, from result documents built here (no server)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rigbook.quality.agree import summarise
from rigbook.quality.result import Answer, QuestionOutcome
from rigbook.quality.stats import mcnemar_exact_p
from tests.quality.test_compare import _needle


def test_mcnemar_matches_the_recorded_discordance():
    from rigbook.quality.agree import summarise
    from rigbook.quality.result import Answer, QuestionOutcome

    def o(i, a_ok, b_ok):
        return QuestionOutcome(
            id=str(i),
            gold="A",
            a=Answer(letter="A" if a_ok else "B", correct=a_ok),
            b=Answer(letter="A" if b_ok else "C", correct=b_ok),
        )

    outcomes = [
        o(0, True, False),
        o(1, True, False),
        o(2, True, False),
        o(3, False, True),
        o(4, True, True),
        o(5, False, False),
    ]
    s = summarise(outcomes)
    assert (s.only_a_correct, s.only_b_correct) == (3, 1)
    assert s.mcnemar_p == mcnemar_exact_p(3, 1) == 0.625
    assert s.differing == ["0", "1", "2", "3", "5"] and s.agreement_pct == pytest.approx(
        100 / 6, abs=0.01
    )


def test_a_failed_request_leaves_the_question_out():
    ok = QuestionOutcome(
        id="1", gold="A", a=Answer(letter="A", correct=True), b=Answer(letter="A", correct=True)
    )
    failed = QuestionOutcome(
        id="2", gold="A", a=Answer(error="http_500: boom"), b=Answer(letter="B", correct=False)
    )
    s = summarise([ok, failed])
    assert (s.asked, s.failed, s.counted, s.a_correct, s.b_correct) == (2, 1, 1, 1, 1)
    assert s.differing == [] and s.mcnemar_p == 1.0


def test_no_gold_answers_give_agreement_but_no_accuracy():
    def o(i, a, b):
        return QuestionOutcome(id=str(i), gold=None, a=Answer(letter=a), b=Answer(letter=b))

    s = summarise([o(0, "A", "A"), o(1, None, None), o(2, "B", None)])
    assert s.agree == 2 and s.differing == ["2"] and s.b_no_answer == 2
    assert s.a_correct is None and s.a_accuracy_pct is None and s.mcnemar_p is None


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_report_draws_the_needle_grid(tmp_path, fmt):
    path = _needle(tmp_path / "n.json", 2048, [0, 0.5, 1], [True, False, True])
    p = subprocess.run(
        [sys.executable, "-m", "rigbook", "report", str(path), "--format", fmt, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    value = json.loads(p.stdout)
    (grid,) = value["plots"]
    assert grid.endswith("needle-grid.png") and Path(grid).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = Path(value["report"]).read_text(encoding="utf-8")
    assert "needle-grid.png" in page
    # The probe at depth 0.5 found neither fact: the page says so in either format.
    assert "| 2048 | 0.5 | cold | 0/2 | — | 1928 |" in page
