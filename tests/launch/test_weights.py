"""Weights through huggingface_hub against a stub hub on loopback (real HTTP, real files,
HF_ENDPOINT)."""

import hashlib

import pytest

from rigbook.errors import RigbookError
from rigbook.launch.plan import Download
from rigbook.launch.weights import fetch_weights
from tests.launch.stub_hub import StubRepo, stub_hub

REPO, PIN = "org/tiny", "0123456789abcdef0123456789abcdef01234567"
FILES = {
    "config.json": b'{"a": 1}',
    "model.safetensors": bytes(range(256)) * 4096,
    "sub/tokenizer.json": b'{"t": 2}',
}


@pytest.fixture(autouse=True)
def clean_hf(tmp_path, monkeypatch):
    """No token of yours, no cache of yours, online: each test sets what it needs."""
    from huggingface_hub import constants

    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf-home" / "token"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))


def fetch(url, dest, revision=PIN, files=None):
    return fetch_weights(
        Download(repo=REPO, revision=revision, dest=dest, files=files), endpoint=url
    )


def test_fetches_every_file_at_the_pin_and_checks_each(tmp_path):
    repo = StubRepo(REPO, PIN, FILES)
    with stub_hub(repo) as url:
        got = fetch(url, tmp_path / "w")
    assert sorted(p.relative_to(tmp_path / "w").as_posix() for p in got) == sorted(FILES)
    for name, data in FILES.items():
        assert (
            hashlib.sha256((tmp_path / "w" / name).read_bytes()).digest()
            == hashlib.sha256(data).digest()
        )
    assert any(r.startswith("GET /org/tiny/resolve/" + PIN) for r in repo.requests)


def test_a_ref_name_is_resolved_to_its_commit_by_the_hub(tmp_path):
    repo = StubRepo(REPO, PIN, FILES)
    with stub_hub(repo) as url:
        fetch(url, tmp_path / "w", revision="main")
    assert (tmp_path / "w" / "config.json").read_bytes() == FILES["config.json"]
    assert any(r.startswith("GET /api/models/org/tiny/revision/main") for r in repo.requests)


def test_allow_patterns_fetch_only_the_files_named(tmp_path):
    with stub_hub(StubRepo(REPO, PIN, FILES)) as url:
        fetch(url, tmp_path / "w", files=["*.json"])
    assert (tmp_path / "w" / "config.json").exists() and not (
        tmp_path / "w" / "model.safetensors"
    ).exists()


def test_a_sha_mismatch_is_refused(tmp_path):
    with (
        stub_hub(StubRepo(REPO, PIN, FILES, lie_about="model.safetensors")) as url,
        pytest.raises(RigbookError) as caught,
    ):
        fetch(url, tmp_path / "w")
    assert caught.value.code == "E_FETCH" and "sha256" in caught.value.message


def test_a_gated_model_without_a_token_says_how_to_log_in(tmp_path):
    with (
        stub_hub(StubRepo(REPO, PIN, FILES, gated=True, token="hf_good")) as url,
        pytest.raises(RigbookError) as caught,
    ):
        fetch(url, tmp_path / "w")
    assert caught.value.code == "E_HF_AUTH" and "no token was sent" in caught.value.message
    assert "hf auth login" in caught.value.remedy and "HF_TOKEN" in caught.value.remedy
    assert not (tmp_path / "w" / "model.safetensors").exists()


def test_a_gated_model_with_hf_token_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_good")
    with stub_hub(StubRepo(REPO, PIN, FILES, gated=True, token="hf_good")) as url:
        fetch(url, tmp_path / "w")
    assert (tmp_path / "w" / "model.safetensors").read_bytes() == FILES["model.safetensors"]


def test_the_token_of_hf_auth_login_is_honoured(tmp_path):
    from huggingface_hub import constants

    token_file = tmp_path / "hf-home" / "token"
    token_file.parent.mkdir(parents=True, exist_ok=True)
    token_file.write_text("hf_good")
    assert str(token_file) == constants.HF_TOKEN_PATH
    with stub_hub(StubRepo(REPO, PIN, FILES, gated=True, token="hf_good")) as url:
        fetch(url, tmp_path / "w")
    assert (tmp_path / "w" / "config.json").exists()


def test_a_listing_that_climbs_out_is_refused_before_anything_is_written(tmp_path):
    evil = {**FILES, "../escaped.json": b"{}"}
    with stub_hub(StubRepo(REPO, PIN, evil)) as url, pytest.raises(RigbookError) as caught:
        fetch(url, tmp_path / "w" / "inner")
    assert caught.value.code == "E_FETCH" and "outside its folder" in caught.value.message
    assert (
        not (tmp_path / "w" / "escaped.json").exists() and not (tmp_path / "w" / "inner").exists()
    )


def test_an_existing_different_file_is_never_overwritten(tmp_path):
    dest = tmp_path / "w"
    dest.mkdir()
    (dest / "config.json").write_text("mine")
    with stub_hub(StubRepo(REPO, PIN, FILES)) as url, pytest.raises(RigbookError) as caught:
        fetch(url, dest, files=["config.json"])
    assert caught.value.code == "E_CONFIRM"
    assert (dest / "config.json").read_text() == "mine"


def test_offline_without_the_files_is_a_coded_error(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(RigbookError) as caught:
        fetch("http://127.0.0.1:9", tmp_path / "w")
    assert caught.value.code == "E_FETCH" and "HF_HUB_OFFLINE" in caught.value.message


def test_offline_with_the_files_fetched_earlier_uses_them(tmp_path, monkeypatch):
    from huggingface_hub import constants

    with stub_hub(StubRepo(REPO, PIN, FILES)) as url:
        fetch(url, tmp_path / "w")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    fetch("http://127.0.0.1:9", tmp_path / "w")
    assert (tmp_path / "w" / "model.safetensors").read_bytes() == FILES["model.safetensors"]
