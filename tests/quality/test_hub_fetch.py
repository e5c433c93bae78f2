"""A hub dataset fetched through huggingface_hub from a stub hub on loopback (HF_ENDPOINT).

The stub answers the hub's resolve route with real bytes (a Parquet file in MMLU-Pro's layout
written by pyarrow) and the headers huggingface_hub reads (commit, ETag, size); it records
every request, so the test also proves the pinned commit is what was asked for.
"""

from __future__ import annotations

import pytest

from rigbook.errors import InputError
from rigbook.quality.suite_spec import load_suite
from tests.stub_hf_hub import serve_dataset_file

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

COMMIT = "3373e2e8e4d9c7c6b1e0f1f2a3b4c5d6e7f80912"
REPO = "stub-lab/MMLU-Pro"
PATH = "data/test-00000-of-00001.parquet"


def _mmlu_pro_rows(count: int) -> list[dict]:
    letters = "ABCDEFGHIJ"
    return [
        {
            "question_id": 70 + i,
            "question": f"Question number {i}?",
            "options": [f"option {j} of {i}" for j in range(10 if i % 2 else 4)],
            "answer": letters[i % 4],
            "answer_index": i % 4,
            "cot_content": "",
            "category": "math" if i % 3 else "law",
            "src": "stub",
        }
        for i in range(count)
    ]


@pytest.fixture
def stub_hub(tmp_path, monkeypatch):
    table = pa.Table.from_pylist(_mmlu_pro_rows(30))
    file = tmp_path / "test.parquet"
    pq.write_table(table, file)
    with serve_dataset_file(tmp_path, monkeypatch, REPO, COMMIT, PATH, file.read_bytes()) as hub:
        yield hub


def test_fetches_the_pinned_commit_and_reads_mmlu_pro_rows(stub_hub):
    suite = load_suite(f"hf:{REPO}@{COMMIT}", 8, seed=3)
    assert any(
        path.startswith(f"/datasets/{REPO}/resolve/{COMMIT}/") for _, path in stub_hub["seen"]
    )
    assert suite.info.version == COMMIT and suite.info.source == f"hf:{REPO}@{COMMIT}:{PATH}"
    assert stub_hub["sha"] in suite.info.selection and "seed 3" in suite.info.selection
    rows = {str(r["question_id"]): r for r in _mmlu_pro_rows(30)}
    assert len(suite.questions) == 8
    for q in suite.questions:
        row = rows[q.id]
        assert q.question == row["question"] and q.options == row["options"]
        assert q.answer == row["answer"] and q.category == row["category"]
    # The same seed picks the same questions; another seed picks others.
    assert [q.id for q in load_suite(f"hf:{REPO}@{COMMIT}", 8, seed=3).questions] == [
        q.id for q in suite.questions
    ]
    assert [q.id for q in load_suite(f"hf:{REPO}@{COMMIT}", 8, seed=4).questions] != [
        q.id for q in suite.questions
    ]


def test_a_branch_name_is_not_a_pin(stub_hub):
    with pytest.raises(InputError) as e:
        load_suite(f"hf:{REPO}@main", 8, seed=0)
    assert e.value.code == "E_SUITE" and "pinned commit" in e.value.message
    assert stub_hub["seen"] == []


def test_a_missing_file_is_e_suite(stub_hub):
    with pytest.raises(InputError) as e:
        load_suite(f"hf:{REPO}@{COMMIT}:data/nope.parquet", 8, seed=0)
    assert e.value.code == "E_SUITE" and "could not fetch" in e.value.message


def test_more_questions_than_the_file_has_asks_them_all_with_a_note(stub_hub):
    suite = load_suite(f"hf:{REPO}@{COMMIT}", 31, seed=0)
    assert [q.id for q in suite.questions] == [str(70 + i) for i in range(30)]
    assert suite.info.n == 30 and suite.info.selection.startswith("all 30;")
    assert "30 questions, fewer than --n 31" in suite.info.note
