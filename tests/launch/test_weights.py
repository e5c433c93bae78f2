"""The weights fetcher against a real HTTP server on loopback that answers like the hub."""

import hashlib

import pytest

from rigbook.errors import RigbookError
from rigbook.launch.plan import Download
from rigbook.launch.weights import fetch_weights
from tests.launch.stub_http import json_body, serve

REPO, PIN = "org/tiny", "0123456789abcdef0123456789abcdef01234567"
FILES = {"config.json": b'{"a": 1}', "model.safetensors": bytes(range(256)) * 4096}


def hub(files, sha_of=None, ranges=None):
    sha_of = sha_of or {}

    def handle(request):
        if request.path.startswith(f"/api/models/{REPO}/revision/{PIN}"):
            siblings = [{"rfilename": name, "size": len(data),
                         **({"lfs": {"sha256": sha_of.get(name, hashlib.sha256(data).hexdigest()), "size": len(data)}}
                            if name.endswith(".safetensors") else {})} for name, data in files.items()]
            return 200, {}, json_body({"siblings": siblings})
        prefix = f"/{REPO}/resolve/{PIN}/"
        if request.path.startswith(prefix):
            data = files[request.path[len(prefix):]]
            wanted = request.headers.get("Range")
            if wanted:
                start = int(wanted.removeprefix("bytes=").rstrip("-"))
                if ranges is not None:
                    ranges.append(start)
                return 206, {"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"}, data[start:]
            return 200, {}, data
        return 404, {}, b"not found"

    return handle


def test_fetches_every_file_at_the_pin_and_checks_sha(tmp_path):
    with serve(hub(FILES)) as url:
        got = fetch_weights(Download(repo=REPO, revision=PIN, dest=tmp_path / "w"), endpoint=url)
    assert sorted(p.name for p in got) == ["config.json", "model.safetensors"]
    assert (tmp_path / "w" / "model.safetensors").read_bytes() == FILES["model.safetensors"]
    assert not list((tmp_path / "w").glob("*.part"))


def test_resumes_a_partial_download_with_a_range_request(tmp_path):
    dest = tmp_path / "w"
    dest.mkdir()
    half = len(FILES["model.safetensors"]) // 2
    (dest / "model.safetensors.part").write_bytes(FILES["model.safetensors"][:half])
    ranges = []
    with serve(hub(FILES, ranges=ranges)) as url:
        fetch_weights(Download(repo=REPO, revision=PIN, dest=dest, files=["model.safetensors"]), endpoint=url)
    assert ranges == [half]
    assert (dest / "model.safetensors").read_bytes() == FILES["model.safetensors"]


def test_a_sha_mismatch_is_refused_and_the_partial_removed(tmp_path):
    with serve(hub(FILES, sha_of={"model.safetensors": "0" * 64})) as url, pytest.raises(RigbookError) as caught:
        fetch_weights(Download(repo=REPO, revision=PIN, dest=tmp_path / "w"), endpoint=url)
    assert caught.value.code == "E_FETCH" and "sha256" in caught.value.message
    assert not (tmp_path / "w" / "model.safetensors").exists()
    assert not (tmp_path / "w" / "model.safetensors.part").exists()


def test_an_existing_different_file_is_never_overwritten(tmp_path):
    dest = tmp_path / "w"
    dest.mkdir()
    (dest / "config.json").write_text("mine")
    with serve(hub(FILES)) as url, pytest.raises(RigbookError) as caught:
        fetch_weights(Download(repo=REPO, revision=PIN, dest=dest, files=["config.json"]), endpoint=url)
    assert caught.value.code == "E_CONFIRM"
    assert (dest / "config.json").read_text() == "mine"
