"""`plan` and `up --dry-run`: the full steps for the seed record and the guide's script, touching nothing."""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from tests.launch.helpers import GUIDE, RIG_2X, SEED, rigbook


def test_seed_record_plan_maps_gpus_port_and_env_knobs():
    done = rigbook(
        "plan", str(SEED), "--rig", str(RIG_2X), "--gpus", "0,1", "--port", "18000", "--json"
    )
    assert done.returncode in (0, 2), done.stderr
    plan = json.loads(done.stdout)
    kinds = [s["kind"] for s in plan["steps"]]
    assert kinds == ["check", "engine", "weights", "start", "ready", "smoke"]
    assert [s["number"] for s in plan["steps"]] == list(range(1, 7))
    argv = plan["command"]["argv"]
    assert argv[:2] == ["docker", "run"] and argv[-1].startswith(
        "ghcr.io/local-inference-lab/vllm:karmic-kraken"
    )
    assert argv[argv.index("--gpus") + 1] == '"device=0,1"'
    assert "127.0.0.1:18000:8000" in argv and "-d" not in argv
    assert "--network" not in argv  # replaced by the published port
    assert "TP=2" in argv and "GPU_MEMORY_UTILIZATION=0.985" in argv
    assert "NCCL_NVLS_ENABLE" in argv and plan["command"]["env"]["NCCL_NVLS_ENABLE"] == "0"
    weights = plan["steps"][2]
    assert weights["downloads"][0]["revision"] == "fd660d51d1fc3caae26a4bf31b7451475bbb9bdc"
    assert plan["url"] == "http://127.0.0.1:18000"


def test_gpus_given_by_uuid_are_mapped_by_uuid():
    uuids = "GPU-8d24e7b0-52c1-4f3e-a7d9-0c9b5e2f4a22,GPU-3f0c9a5e-1b7d-4c55-9e1a-6a2f1c0d8b11"
    done = rigbook("plan", GUIDE, "--rig", str(RIG_2X), "--gpus", uuids, "--json")
    plan = json.loads(done.stdout)
    assert plan["command"]["env"]["CUDA_VISIBLE_DEVICES"] == uuids


def test_unknown_gpu_is_refused_with_what_the_rig_has():
    done = rigbook("plan", GUIDE, "--rig", str(RIG_2X), "--gpus", "0,7")
    assert (
        done.returncode == 2 and "error[E_INPUT]" in done.stderr and "GPU-3f0c9a5e" in done.stderr
    )


def test_guide_dry_run_prints_clone_drafter_autotune_and_port_8022():
    done = rigbook(
        "up", GUIDE, "--rig", str(RIG_2X), "--drafter", "mtp", env={"RIGBOOK_DRY_RUN": "1"}
    )
    assert done.returncode in (0, 2), done.stderr
    out = done.stdout
    for expected in (
        "dry run",
        "git clone -- https://github.com/Aevonix/GLM-5.3-Flash-EXL3-2x-RTX-PRO-6000-TensorFold.git",
        "DRY_RUN=1",
        "DRAFTER=mtp",
        "86 patches",
        "autotune",
        "./start.sh",
        "http://127.0.0.1:8022/v1/models",
        "glm-5.3-flash",
        "CUDA_VISIBLE_DEVICES=0,1",
        "no pinned commit",
    ):
        assert expected in out, expected
    numbers = [
        int(m.group(1)) for m in (re.match(r"^(\d+)\. ", line) for line in out.splitlines()) if m
    ]
    assert numbers == list(range(1, 9))


GUARD = textwrap.dedent("""
    import sys
    def guard(event, args):
        if event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.fork", "socket.connect",
                     "socket.bind", "socket.getaddrinfo"):
            raise RuntimeError("DRY-RUN-VIOLATION " + event)
    sys.addaudithook(guard)
    sys.argv = ["rigbook", *sys.argv[1:]]
    from rigbook.cli.app import main
    main()
""")


def _guarded(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": "/nonexistent", "RIGBOOK_DRY_RUN": "1"}
    return subprocess.run(
        [sys.executable, "-c", GUARD, *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_dry_run_starts_no_process_and_opens_no_socket():
    for ref in (str(SEED), GUIDE):
        done = _guarded("up", ref, "--rig", str(RIG_2X))
        assert "DRY-RUN-VIOLATION" not in done.stderr + done.stdout, done.stderr
        assert (
            done.returncode in (0, 2) and "1. check" in done.stdout and "smoke test" in done.stdout
        )
    # Without --rig nothing is probed either.
    done = _guarded("up", str(SEED))
    assert done.returncode == 0, done.stderr
    assert "docker run" in done.stdout


def test_plan_without_a_recipe_on_a_cpu_machine_is_the_embedded_one():
    done = rigbook("plan", "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert (
        plan["recipe"] == "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp"
        and plan["target"]["gpus"] == []
    )
    assert plan["kind"] == "llama_server" and plan["command"]["argv"][0].endswith("llama-server")


@pytest.mark.parametrize(
    ("gpus", "why"),
    [
        ("abc", "not a GPU index or UUID"),
        ("0,1,2", "runs on 2 GPU(s), not 3"),
        ("0,0", "named twice"),
        ("0,", "not a GPU index or UUID"),
    ],
)
def test_a_bad_gpus_value_is_refused_before_anything_is_planned(gpus, why):
    for rig in ([], ["--rig", str(RIG_2X)]):
        done = rigbook("plan", GUIDE, *rig, "--gpus", gpus, "--json")
        assert done.returncode == 2, done.stdout
        error = json.loads(done.stdout)["error"]
        assert error["code"] == "E_INPUT" and why in error["message"]


def test_weights_that_do_not_fit_block_the_launch_with_e_disk(tmp_path):
    recipe = {
        "slug": "too-big",
        "title": "t",
        "config": {"launch": []},
        "hardware": [],
        "artifacts": [
            {
                "kind": "model_weights",
                "pointer_type": "hf_model",
                "pointer": "https://huggingface.co/org/huge",
                "pin": "abc123",
                "size_bytes": 10**18,
            }
        ],
        "rigbook": {"launch": {"kind": "vllm", "model": "org/huge"}},
    }
    path = tmp_path / "too-big.json"
    path.write_text(json.dumps(recipe))
    done = rigbook("plan", str(path), "--models-dir", str(tmp_path), "--json")
    assert done.returncode == 2
    weights = next(s for s in json.loads(done.stdout)["steps"] if s["kind"] == "weights")
    assert "DOES NOT FIT" in " ".join(weights["details"]) and [
        f["code"] for f in weights["findings"]
    ] == ["E_DISK"]
    up = rigbook("up", str(path), "--yes", "--models-dir", str(tmp_path), "--json")
    assert up.returncode == 2 and json.loads(up.stdout)["error"]["code"] == "E_DISK"


def test_plan_reads_this_machine_when_no_rig_is_given():
    done = rigbook("plan", "--json")
    check = json.loads(done.stdout)["steps"][0]
    assert check["kind"] == "check" and not any("skipped" in d for d in check["details"])


def test_an_external_endpoint_fetches_nothing_and_skips_this_machines_hardware_checks(tmp_path):
    recipe = {
        "slug": "k-external",
        "title": "t",
        "config": {"launch": []},
        "hardware": [
            {"slug": "x", "vendor": "nvidia", "card": "RTX PRO 6000 Blackwell", "device_count": 2}
        ],
        "artifacts": [
            {
                "kind": "model_weights",
                "pointer_type": "hf_model",
                "pointer": "https://huggingface.co/org/name",
                "pin": "abc123",
                "size_bytes": 1000,
            }
        ],
        "rigbook": {"launch": {"kind": "external", "url": "http://127.0.0.1:47481"}},
    }
    path = tmp_path / "k-external.json"
    path.write_text(json.dumps(recipe))
    done = rigbook(
        "plan", str(path), "--json"
    )  # this machine has no GPU: a local check would block
    assert done.returncode == 0, done.stdout
    plan = json.loads(done.stdout)
    assert [s["kind"] for s in plan["steps"]] == ["check", "engine", "ready", "smoke"]
    assert [f["code"] for s in plan["steps"] for f in s["findings"]] == []
    assert plan["target"]["gpus"] == []


def test_docker_model_knob_points_at_the_mounted_pinned_weights(tmp_path):
    done = rigbook("plan", str(SEED), "--rig", str(RIG_2X), "--models-dir", str(tmp_path), "--json")
    plan = json.loads(done.stdout)
    argv = plan["command"]["argv"]
    inside = "/models/local-inference-lab/GLM-5.3-Flash-NVFP4-MXFP8-CSF-QAD"
    pin = "fd660d51d1fc3caae26a4bf31b7451475bbb9bdc"
    assert f"MODEL={inside}" in argv
    assert (
        f"{tmp_path}/local-inference-lab/GLM-5.3-Flash-NVFP4-MXFP8-CSF-QAD/{pin}:{inside}:ro"
        in argv
    )
    assert "MODEL=local-inference-lab/GLM-5.3-Flash-NVFP4-MXFP8-CSF-QAD" not in argv
