"""The Rig `rigbook rig --save` wrote on a real one-H200 machine, and the checks it gave there."""

from __future__ import annotations

from rigbook.preflight.check import check_recipe
from rigbook.recipe.resolve import resolve_recipe
from rigbook.rig.model import load_rig
from tests.conftest import FIXTURES

H200_RECIPE = "smollm2-135m-instruct-q4-1-on-1x-h200-llama-cpp-cuda"
SEED = "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3"


def h200():
    return load_rig(FIXTURES / "rigs" / "h200-1x.rig.json")


def test_the_probe_read_the_card_and_kept_what_failed():
    rig = h200()
    [gpu] = rig.gpus
    assert (
        gpu.name == "NVIDIA H200" and gpu.compute_capability == "9.0" and gpu.memory_query == "v2"
    )
    assert (
        gpu.memory_total_mib == 143771
        and gpu.power_enforced_limit_w == 700.0
        and gpu.power_min_limit_w == 200.0
    )
    assert rig.driver.driver_version == "580.159.04" and rig.driver.cuda_driver_version == "13.0"
    assert rig.pairs == []  # one card: no peer pairs
    # Queries that failed there are kept with their error, not dropped.
    assert any(
        e.query == "nvmlDeviceGetNvLinkState" and e.error == "Not Supported" for e in gpu.errors
    )
    assert rig.docker.available is False and "docker: not found" in rig.docker.errors[0].error


def test_the_h200_recipe_passes_and_the_seed_recipe_is_refused_with_reasons():
    assert check_recipe(resolve_recipe(H200_RECIPE), h200()).findings == []
    seed = check_recipe(resolve_recipe(SEED), h200())
    assert not seed.ok
    assert [f.code for f in seed.findings] == [
        "E_GPU_COUNT",
        "E_GPU_MODEL",
        "E_DOCKER",
        "E_TOOLKIT",
        "E_DISK",
    ]
    disk = next(f for f in seed.findings if f.code == "E_DISK")
    assert "188.9 GB" in disk.message and "67.9 GB free" in disk.message


def test_check_takes_a_gpu_by_uuid_as_plan_does():
    import json
    import subprocess
    import sys

    rig_file = FIXTURES / "rigs" / "h200-1x.rig.json"
    uuid = h200().gpus[0].uuid
    for gpus, ok in (
        (uuid, True),
        ("0", True),
        ("GPU-00000000-0000-0000-0000-000000000000", False),
    ):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "rigbook",
                "check",
                H200_RECIPE,
                "--rig",
                str(rig_file),
                "--gpus",
                gpus,
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        body = json.loads(done.stdout)
        assert (
            (done.returncode, body.get("gpus")) == (0, [0])
            if ok
            else (done.returncode == 2 and body["error"]["code"] == "E_INPUT")
        ), done.stdout
