"""agree end to end against a stub server: a JSONL in MMLU-Pro's own layout, shorter than the
default --n, is asked in full with a note."""

from __future__ import annotations

import json
import subprocess
import sys

from rigbook.quality import result as quality_result
from tests.quality import stubs


def _row(i: int) -> dict:
    return {
        "question_id": 100 + i,
        "question": f"Which option is number {i}?",
        "options": [f"option {j}" for j in range(10)],
        "answer": "AB"[i % 2],
        "answer_index": i % 2,
        "cot_content": "A: Let's think step by step.",
        "category": "other",
        "src": "ori_mmlu-miscellaneous",
    }


def test_a_short_mmlu_pro_file_runs_with_a_note(tmp_path):
    suite = tmp_path / "mmlu-pro.jsonl"
    suite.write_text("".join(json.dumps(_row(i)) + "\n" for i in range(3)))
    out = tmp_path / "agree.json"
    with stubs.serve(stubs.Stub(lambda message: "A")) as url:
        args = [sys.executable, "-m", "rigbook", "agree", url, url, "--suite", str(suite)]
        p = subprocess.run(
            [*args, "--out", str(out), "--json"], capture_output=True, text=True, timeout=120
        )
        plain = subprocess.run(
            [*args, "--out", str(tmp_path / "b.json")], capture_output=True, text=True, timeout=120
        )
    assert p.returncode == 0, p.stdout + p.stderr
    res = quality_result.load(out)
    s, info = res.summary, res.conditions.suite
    assert [q.id for q in res.questions] == ["100", "101", "102"]
    assert [q.gold for q in res.questions] == ["A", "B", "A"]
    assert info.n == 3 and info.selection == "all 3"
    assert info.note == f"{suite} has 3 questions, fewer than --n 200: all 3 are asked"
    assert json.loads(p.stdout)["conditions"]["suite"]["note"] == info.note
    assert (s.a_correct, s.b_correct, s.agree, s.mcnemar_p) == (2, 2, 3, 1.0)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "fewer than --n 200: all 3 are asked" in " ".join(plain.stdout.split())
