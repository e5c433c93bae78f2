"""The local engine image is made again only when one of its inputs changes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docker.conftest import IMAGE, ROOT


def image_script(root: Path, mode: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["sh", str(root / "scripts" / "docker_image.sh"), mode, sys.executable],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def image_id() -> str:
    done = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", IMAGE],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.e2e
def test_an_unchanged_image_is_kept_and_a_changed_input_builds_anew(engine_image, tmp_path):
    tar = Path(image_script(ROOT, "build"))
    built = tar.stat().st_mtime_ns
    before = image_id()
    assert image_script(ROOT, "load") == IMAGE
    assert image_id() == before and tar.stat().st_mtime_ns == built
    label = subprocess.run(
        [
            "docker",
            "image",
            "inspect",
            "--format",
            '{{index .Config.Labels "org.rigbook.inputs"}}',
            IMAGE,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert tar.name == f"llama-server-cpu-{label}.tar"

    # One changed input (the entrypoint) is another tar, built from Debian's packages again.
    copy = tmp_path / "tree"
    shutil.copytree(ROOT / "scripts", copy / "scripts")
    shutil.copytree(ROOT / "docker", copy / "docker")
    with open(copy / "docker" / "llama-server" / "entrypoint.sh", "a") as entry:
        entry.write("# changed\n")
    other = Path(image_script(copy, "build", {"RIGBOOK_IMAGE_CACHE": str(tmp_path / "cache")}))
    assert other.name != tar.name and other.stat().st_size > 50_000_000
