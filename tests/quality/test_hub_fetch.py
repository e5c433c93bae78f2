"""A hub dataset fetched through huggingface_hub from a stub hub on loopback (HF_ENDPOINT).

The stub answers the hub's resolve route with real bytes (a Parquet file in MMLU-Pro's layout
written by pyarrow) and the headers huggingface_hub reads (commit, ETag, size); it records
every request, so the test also proves the pinned commit is what was asked for.
"""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rigbook.errors import InputError
from rigbook.quality.suite_spec import load_suite

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
    data = file.read_bytes()
    etag = hashlib.sha256(data).hexdigest()
    seen: list[tuple[str, str]] = []

    class Hub(BaseHTTPRequestHandler):
        def _answer(self, with_body: bool) -> None:
            seen.append((self.command, self.path))
            if self.path.split("?")[0] != f"/datasets/{REPO}/resolve/{COMMIT}/{PATH}":
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("ETag", f'"{etag}"')
            self.send_header("X-Repo-Commit", COMMIT)
            self.end_headers()
            if with_body:
                self.wfile.write(data)

        def do_HEAD(self):
            self._answer(False)

        def do_GET(self):
            self._answer(True)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    # huggingface_hub reads its cache folder once, at import: another test may have imported it,
    # and a file cached by an earlier run must not answer for the stub.
    import huggingface_hub.constants

    monkeypatch.setattr(
        huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-home" / "hub")
    )
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    yield {"seen": seen, "sha": etag}
    server.shutdown()


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
