"""Suites are versioned data; the built-in one has correct gold answers; files are checked."""

import json
import re

import pytest

from rigbook.errors import InputError
from rigbook.quality.extract import LETTERS
from rigbook.quality.suite_spec import load_suite
from rigbook.quality.suites import builtin_questions, list_builtin

# A changed question needs a new version: add it here, never edit a pinned line.
PINNED = {
    ("generated", 1): "sha256:483411fcbc9f8770d2d4899a35166739041cded9c348bbd6fd604b3c5967f4ef",
}


def test_every_builtin_suite_is_pinned_to_its_hash():
    shipped = {
        (name, ver): load_suite(f"{name}@{ver}", 1000, 0).info.questions_hash
        for name, ver in list_builtin()
    }
    assert shipped == PINNED


def test_generated_gold_answers_are_right():
    _, questions = builtin_questions("generated")
    assert len({q.id for q in questions}) == len(questions) == 1000
    for q in questions:
        gold = q.options[LETTERS.index(q.answer)]
        assert len(set(q.options)) == len(q.options) == 4
        if q.category == "arithmetic":
            a, op, b = re.fullmatch(r"What is (\d+) ([+-]) (\d+)\?", q.question).groups()
            assert int(gold) == (int(a) + int(b) if op == "+" else int(a) - int(b))
        else:
            table = dict(re.findall(r"(\w+) = (\d+)", q.question))
            asked = re.search(r"value of (\w+)\?", q.question).group(1)
            assert gold == table[asked]


def test_gold_letters_are_spread():
    _, questions = builtin_questions("generated")
    counts = {letter: sum(q.answer == letter for q in questions) for letter in "ABCD"}
    assert min(counts.values()) > 150  # a model always answering one letter scores ~25 %


def test_n_takes_the_first_questions_and_records_it():
    suite = load_suite("generated", 20, 0)
    assert suite.info.n == 20 and suite.info.version == "v1" and suite.info.selection == "first 20"
    assert [q.id for q in suite.questions] == [q.id for q in builtin_questions("generated")[1][:20]]


def test_jsonl_suite(tmp_path):
    f = tmp_path / "mine.jsonl"
    rows = [
        {"question": "2+2?", "options": ["3", "4"], "answer": "B"},
        {"id": "x", "question": "Sky?", "options": ["blue", "green", "red"]},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    suite = load_suite(str(f), 2, 0)
    assert [q.id for q in suite.questions] == ["1", "x"]
    assert suite.questions[1].answer is None
    assert suite.info.version.startswith("sha256:") and suite.info.source == str(f)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"question": "q", "options": ["a", "b"], "answer": "C"}', "not the letter"),
        ('{"question": "q", "options": ["a"]}', "at least 2"),
        ("not json", "Expecting value"),
    ],
)
def test_bad_jsonl_lines_are_e_suite(tmp_path, line, why):
    f = tmp_path / "bad.jsonl"
    f.write_text(line + "\n")
    with pytest.raises(InputError) as e:
        load_suite(str(f), 1, 0)
    assert e.value.code == "E_SUITE" and "line 1" in e.value.message and why in e.value.message


def test_unknown_suite_and_bad_versions():
    with pytest.raises(InputError) as e:
        load_suite("nope", 5, 0)
    assert e.value.code == "E_SUITE"
    with pytest.raises(InputError) as e:
        load_suite("generated@9", 5, 0)
    assert e.value.code == "E_SUITE"


def test_a_suite_shorter_than_n_is_asked_in_full_with_a_note(tmp_path):
    suite = load_suite("generated", 5000, 0)
    assert suite.info.n == 1000 and suite.info.selection == "all 1000"
    assert (
        suite.info.note
        == "suite generated v1 has 1000 questions, fewer than --n 5000: all 1000 are asked"
    )
    f = tmp_path / "three.jsonl"
    f.write_text(
        "".join(json.dumps({"question": f"q{i}?", "options": ["a", "b"]}) + "\n" for i in range(3))
    )
    short = load_suite(str(f), 200, 0)
    assert [q.id for q in short.questions] == [
        "1",
        "2",
        "3",
    ] and "fewer than --n 200" in short.info.note
    assert load_suite(str(f), 3, 0).info.note is None


def _mmlu_pro_row(i: int, **change) -> dict:
    """A row as MMLU-Pro's test split writes it."""
    row = {
        "question_id": 70 + i,
        "question": f"Typical advertising regulatory bodies suggest, for example, #{i}?",
        "options": [f"option {j}" for j in range(10)],
        "answer": "CDEF"[i % 4],
        "answer_index": 2 + i % 4,
        "cot_content": "A: Let's think step by step.",
        "category": "business",
        "src": "ori_mmlu-business_ethics",
    }
    return row | change


def test_a_jsonl_in_mmlu_pros_own_layout(tmp_path):
    f = tmp_path / "mmlu-pro.jsonl"
    f.write_text("".join(json.dumps(_mmlu_pro_row(i)) + "\n" for i in range(4)))
    suite = load_suite(str(f), 200, 0)
    assert [q.id for q in suite.questions] == ["70", "71", "72", "73"]
    assert [q.answer for q in suite.questions] == ["C", "D", "E", "F"]
    assert suite.questions[0].options[9] == "option 9" and suite.questions[0].category == "business"
    assert "fewer than --n 200" in suite.info.note
    # answer_index alone names the gold letter too.
    only_index = {k: v for k, v in _mmlu_pro_row(1).items() if k != "answer"}
    f.write_text(json.dumps(only_index) + "\n")
    assert load_suite(str(f), 1, 0).questions[0].answer == "D"


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"answer": "B"}, "name different options"),
        ({"answer_index": 10}, "not the index of one of the options"),
        ({"answer_index": "2"}, "not the index of an option"),
        ({"opshuns": []}, "unknown field(s) opshuns"),
    ],
)
def test_a_bad_mmlu_pro_row_says_why_and_names_both_layouts(tmp_path, change, why):
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps(_mmlu_pro_row(0, **change)) + "\n")
    with pytest.raises(InputError) as e:
        load_suite(str(f), 1, 0)
    assert e.value.code == "E_SUITE" and why in e.value.message
    assert "MMLU-Pro's layout" in e.value.remedy and "hf:" in e.value.remedy
