"""ShareGPT-layout prompts from a file, and from a hub dataset at a pinned commit fetched through
huggingface_hub from a stub hub on loopback (HF_ENDPOINT), which records what was asked."""

from __future__ import annotations

import hashlib
import json

import pytest

from rigbook.bench.workloads.dataset import load_dataset, parse_sharegpt, select
from rigbook.errors import InputError
from tests.stub_hf_hub import serve_dataset_file

COMMIT = "5c6e2e8e4d9c7c6b1e0f1f2a3b4c5d6e7f80912a"
REPO = "stub-lab/ShareGPT-stub"
PATH = "data/sharegpt.jsonl"


def _rows(n: int) -> list[dict]:
    return [
        {
            "id": f"c{i}",
            "conversations": [
                {"from": "system", "value": "be brief"},
                {"from": "human", "value": "Q" * (5 + 10 * i)},
                {"from": "gpt", "value": "an answer"},
            ],
        }
        for i in range(n)
    ]


def _jsonl(rows: list[dict]) -> bytes:
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def test_first_human_turn_of_each_row_in_jsonl_or_a_json_array():
    rows = _rows(3)
    assert parse_sharegpt(_jsonl(rows), "f") == ["Q" * 5, "Q" * 15, "Q" * 25]
    assert parse_sharegpt(json.dumps(rows).encode(), "f") == ["Q" * 5, "Q" * 15, "Q" * 25]
    user = {"conversations": [{"from": "user", "value": "hi"}]}
    assert parse_sharegpt(json.dumps(user).encode(), "f") == ["hi"]


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("not json", "line 3: not JSON"),
        ("[1]", "line 3: not a JSON object"),
        ('{"id": 1}', "line 3: has no conversations list"),
        ('{"conversations": [{"from": "gpt", "value": "x"}]}', "line 3: has no human turn"),
        ('{"conversations": [{"from": "human", "value": 5}]}', "line 3: its human turn's value"),
    ],
)
def test_a_bad_row_is_e_dataset_naming_its_line(line, says):
    data = _jsonl(_rows(2)) + line.encode() + b"\n"
    with pytest.raises(InputError) as e:
        parse_sharegpt(data, "d.jsonl")
    assert e.value.code == "E_DATASET" and e.value.message.startswith(f"d.jsonl {says}")


def test_length_filters_and_a_seeded_sample_in_file_order():
    prompts = [f"{i:03d}" + "x" * i for i in range(100)]
    picked, how = select(prompts, n=10, seed=7, min_chars=20, max_chars=60, source="s")
    assert len(picked) == 10 and all(20 <= len(p) <= 60 for p in picked)
    assert picked == sorted(picked)  # file order
    assert how == "seeded sample of 10 of 41 prompts of 20..60 chars (100 rows; seed 7)"
    again, _ = select(prompts, n=10, seed=7, min_chars=20, max_chars=60, source="s")
    other, _ = select(prompts, n=10, seed=8, min_chars=20, max_chars=60, source="s")
    assert again == picked and other != picked
    everything, how = select(prompts, n=500, seed=0, source="s")
    assert everything == prompts and how.startswith("all 100 of 100 rows")
    with pytest.raises(InputError) as e:
        select(prompts, n=5, seed=0, min_chars=1000, source="s")
    assert e.value.code == "E_DATASET" and "no prompt of s is 1000.. chars long" in e.value.message


def test_a_local_file(tmp_path):
    file = tmp_path / "sg.jsonl"
    file.write_bytes(_jsonl(_rows(8)))
    got = load_dataset(str(file), n=3, seed=1, max_chars=60)
    assert len(got.prompts) == 3 and got.sha256 == hashlib.sha256(file.read_bytes()).hexdigest()
    assert got.source == str(file) and "seed 1" in got.selection


@pytest.fixture
def stub_hub(tmp_path, monkeypatch):
    with serve_dataset_file(tmp_path, monkeypatch, REPO, COMMIT, PATH, _jsonl(_rows(20))) as hub:
        yield hub


def test_a_hub_dataset_at_its_pinned_commit(stub_hub):
    got = load_dataset(f"hf:{REPO}@{COMMIT}:{PATH}", n=4, seed=2)
    assert any(
        p.startswith(f"/datasets/{REPO}/resolve/{COMMIT}/{PATH}") for _, p in stub_hub["seen"]
    )
    assert got.source == f"hf:{REPO}@{COMMIT}:{PATH}" and got.sha256 == stub_hub["sha"]
    assert len(got.prompts) == 4 and all(p.startswith("Q") for p in got.prompts)
    assert got.prompts == load_dataset(f"hf:{REPO}@{COMMIT}:{PATH}", n=4, seed=2).prompts


def test_a_branch_is_not_a_pin_and_nothing_is_fetched(stub_hub):
    with pytest.raises(InputError) as e:
        load_dataset(f"hf:{REPO}@main:{PATH}", n=4, seed=0)
    assert e.value.code == "E_DATASET" and "not a pinned commit" in e.value.message
    assert stub_hub["seen"] == []


def test_a_missing_hub_file_is_e_dataset(stub_hub):
    with pytest.raises(InputError) as e:
        load_dataset(f"hf:{REPO}@{COMMIT}:data/nope.jsonl", n=4, seed=0)
    assert e.value.code == "E_DATASET" and "could not fetch" in e.value.message
