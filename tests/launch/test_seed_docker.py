"""The seed record itself, judged by docker: a stub image tagged with its image name (tests only).

`check` and `plan` report what it needs (two GPUs, the NVIDIA runtime, its env knobs) and say
that docker judged it; `up` on a machine without GPUs refuses before starting anything, with
the code and remedy, and leaves no container and no volume behind.
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Iterator

import pytest

from tests.launch.helpers import RIG_2X, SEED, rigbook
from tests.security.test_docker_judge import docker, judge_containers, stub_image, volumes

pytestmark = pytest.mark.usefixtures("docker_daemon")

IMAGE = json.loads(SEED.read_text())["config"]["launch"][-1]
VOLUMES = {"glm53-qad-2x6000-runtime-cache", "glm53-qad-2x6000-hf-cache"}


@functools.cache
def _no_gpu() -> bool:
    """This machine has no GPU (rigbook's own probe says so)."""
    done = rigbook("rig", "--json", timeout=120)
    return done.returncode == 0 and json.loads(done.stdout)["gpus"] == []


@pytest.fixture(scope="module")
def seed_image() -> Iterator[str]:
    if docker("image", "inspect", IMAGE, check=False).returncode == 0:
        pytest.skip(f"{IMAGE} is present here already; the test tags a stub only where it is not")
    if VOLUMES & volumes():
        pytest.skip(f"the seed's volumes exist here already ({VOLUMES & volumes()})")
    with stub_image(IMAGE) as tag:
        yield tag
    assert not VOLUMES & volumes() and judge_containers() == []


@pytest.fixture
def home(tmp_path) -> dict[str, str]:
    return {"RIGBOOK_HOME": str(tmp_path / "home")}


def _codes(findings: list[dict]) -> list[str]:
    return [f["code"] for f in findings]


def test_check_reports_two_gpus_the_nvidia_runtime_and_that_docker_judged(seed_image, home):
    done = rigbook("check", str(SEED), "--json", env=home)
    report = json.loads(done.stdout)
    codes = _codes(report["findings"])
    assert "I_DOCKER_JUDGE" in codes and "E_UNSAFE" not in codes, report["findings"]
    if _no_gpu():
        assert done.returncode == 2
        needs = {f["code"]: f["message"] for f in report["findings"]}
        assert "2 GPUs" in needs["E_GPU_COUNT"]
        assert "nvidia runtime" in needs["E_TOOLKIT"]
    assert not VOLUMES & volumes() and judge_containers() == []


def test_plan_on_a_two_gpu_rig_shows_its_knobs_and_docker_passes_its_gpus(seed_image, home):
    done = rigbook("plan", str(SEED), "--rig", str(RIG_2X), "--gpus", "0,1", "--json", env=home)
    plan = json.loads(done.stdout)
    argv = plan["command"]["argv"]
    assert argv[argv.index("--gpus") + 1] == '"device=0,1"'
    for knob in ("TP=2", "DCP=2", "SPECULATOR=mtp", "MTP_DEPTH=3", "MAX_MODEL_LEN=1048576"):
        assert knob in argv
    start = next(s for s in plan["steps"] if s["kind"] == "start")
    assert _codes(start["findings"]) == ["I_DOCKER_JUDGE"], start["findings"]
    assert plan["dangers"] == []
    assert not VOLUMES & volumes() and judge_containers() == []


def test_plan_here_blocks_on_the_missing_gpus(seed_image, home):
    if not _no_gpu():
        pytest.skip("this machine has GPUs")
    done = rigbook("plan", str(SEED), "--json", env=home)
    assert done.returncode == 2
    plan = json.loads(done.stdout)
    check = plan["steps"][0]
    assert {"E_GPU_COUNT", "E_TOOLKIT"} <= set(_codes(check["findings"]))
    start = next(s for s in plan["steps"] if s["kind"] == "start")
    assert "I_DOCKER_JUDGE" in _codes(start["findings"])


def test_up_without_gpus_refuses_before_starting_anything_and_leaves_nothing(seed_image, home):
    if not _no_gpu():
        pytest.skip("this machine has GPUs")
    before = set(docker("ps", "-aq").stdout.split())
    done = rigbook("up", str(SEED), "--yes", "--json", env=home)
    assert done.returncode == 2, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "E_GPU_COUNT" and "2 GPUs" in error["message"]
    assert error["remedy"]
    assert set(docker("ps", "-aq").stdout.split()) <= before
    assert not VOLUMES & volumes() and judge_containers() == []
    named = subprocess.run(
        ["docker", "ps", "-a", "--filter", "name=rigbook-glm-5-3", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert named.stdout.strip() == ""


def test_a_dry_run_asks_docker_nothing(seed_image, home):
    done = rigbook(
        "plan",
        str(SEED),
        "--rig",
        str(RIG_2X),
        "--gpus",
        "0,1",
        "--json",
        env={**home, "RIGBOOK_DRY_RUN": "1"},
    )
    start = next(s for s in json.loads(done.stdout)["steps"] if s["kind"] == "start")
    [judged] = start["findings"]
    assert judged["code"] == "I_HAND_JUDGE" and "dry run" in judged["message"]
