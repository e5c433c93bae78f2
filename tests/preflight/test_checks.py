"""Single checks on rigs and recipes changed just enough to trigger them."""

from __future__ import annotations

import socket

import pytest

from rigbook.errors import InputError
from rigbook.preflight.check import check_recipe
from rigbook.preflight.memory_need import memory_need
from rigbook.recipe.resolve import resolve_recipe
from rigbook.recipe.schema import DriverFloor, Requirements
from rigbook.rig.cards import parse_card, primary_variant
from rigbook.rig.model import Disk, P2PTest, load_rig
from rigbook.rig.nvml import read_nvml
from rigbook.rig.probe import rig_from_nvml
from rigbook_testkit.nvml_replay import NvmlReplay
from tests.conftest import FIXTURES

GUIDE = "glm-5-3-flash-exl3-on-2x-rtx-pro-6000-blackwell-tensorfold-300w"
SEED = "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3"
EMBEDDED = "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp"


def rig(name: str = "2x-rtx-pro-6000-300w"):
    return load_rig(FIXTURES / "rigs" / f"{name}.rig.json")


def codes(report) -> list[str]:
    return [f.code for f in report.findings]


def test_h200_against_the_guide_recipe():
    h200 = rig_from_nvml(
        read_nvml(NvmlReplay.from_file(FIXTURES / "rigs" / "h200-1gpu-vm.nvml.json"))
    )
    report = check_recipe(resolve_recipe(GUIDE), h200)
    model = next(f for f in report.findings if f.code == "E_GPU_MODEL")
    assert (
        model.gpus == [0]
        and "NVIDIA H200" in model.message
        and "RTX PRO 6000 Blackwell" in model.message
    )
    count = next(f for f in report.findings if f.code == "E_GPU_COUNT")
    assert "runs on 2 GPUs; this rig has 1" in count.message
    power = next(f for f in report.findings if f.code == "W_POWER")
    assert "700 W" in power.message and "cannot match" not in power.remedy
    assert "E_GPU_MEMORY" not in codes(report) and not report.ok


def test_seed_memory_need_comes_from_gpu_memory_utilization():
    need = memory_need(resolve_recipe(SEED))
    assert need.fraction == 0.985 and need.source == "GPU_MEMORY_UTILIZATION=0.985"
    assert need.for_total(97887, 96) == 96419
    r = rig()
    r.gpus[1].memory_free_mib = 96000
    [memory] = [
        f for f in check_recipe(resolve_recipe(SEED), r).findings if f.code == "E_GPU_MEMORY"
    ]
    assert memory.gpus == [1] and "needs 96419 MiB (0.985 × 97887 MiB" in memory.message


def test_argv_flag_gives_memory_need():
    recipe = resolve_recipe(EMBEDDED)
    recipe.config.launch = ["vllm", "serve", "m", "--gpu-memory-utilization=0.5"]
    need = memory_need(recipe)
    assert need.fraction == 0.5 and need.for_total(1000, None) == 500


def test_card_variants():
    assert (
        primary_variant(parse_card("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"))
        == "maxq"
    )
    assert parse_card("NVIDIA RTX PRO 6000 Blackwell Server Edition").model == (
        "rtx",
        "pro",
        "6000",
        "blackwell",
    )
    assert parse_card("NVIDIA H200 NVL").model == parse_card("NVIDIA H200").model


def test_max_q_card_matches_max_q_recipe():
    r = rig()
    for g in r.gpus:
        g.name = "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"
    assert "W_GPU_VARIANT" not in codes(check_recipe(resolve_recipe(SEED), r))


def test_wedged_gpu():
    r = rig()
    r.gpus[0].utilization_gpu_pct = 100
    [wedged] = [f for f in check_recipe(resolve_recipe(GUIDE), r).findings if f.code == "W_WEDGED"]
    assert wedged.gpus == [0] and "100 % utilised and no process owns it" in wedged.message


def test_driver_floor():
    recipe = resolve_recipe(GUIDE)
    recipe.requirements = Requirements(driver_floor=DriverFloor(cuda="13.1", linux_min="575.0"))
    [driver] = [f for f in check_recipe(recipe, rig()).findings if f.code == "E_DRIVER"]
    assert driver.message == "CUDA driver version 13.0 is below the recipe's floor 13.1"


def test_disk_too_small_for_weights():
    r = rig()
    r.models_disk = Disk(path="/models", free_bytes=100_000_000_000)
    [disk] = [f for f in check_recipe(resolve_recipe(SEED), r).findings if f.code == "E_DISK"]
    assert disk.message.startswith("weights need 188.9 GB; /models has 100.0 GB free")
    assert "the saved rig's reading on" in disk.message and "not this machine" in disk.message


@pytest.mark.parametrize(
    "pointer",
    [
        "https://huggingface.co/local-inference-lab/GLM-5.3-Flash-NVFP4-MXFP8-CSF-QAD",
        "hf://local-inference-lab/GLM-5.3-Flash-NVFP4-MXFP8-CSF-QAD",  # what `rigbook up` also reads
        "local-inference-lab/GLM-5.3-Flash-NVFP4-MXFP8-CSF-QAD",
    ],
)
def test_disk_already_holding_the_weights_counts_them(tmp_path, pointer):
    r = rig()
    r.live = True
    recipe = resolve_recipe(SEED)
    recipe.artifacts[0].size_bytes = 10
    recipe.artifacts[0].pointer = pointer
    folder = (
        tmp_path
        / "local-inference-lab"
        / "GLM-5.3-Flash-NVFP4-MXFP8-CSF-QAD"
        / recipe.artifacts[0].pin
    )
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"x" * 10)
    r.models_disk = Disk(path=str(tmp_path), free_bytes=5)
    assert "E_DISK" not in codes(check_recipe(recipe, r, port=_free_port()))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def test_port_taken_on_a_live_rig():
    r = rig()
    r.live = True
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 0))
        holder.listen()
        port = holder.getsockname()[1]
        [taken] = [
            f
            for f in check_recipe(resolve_recipe(GUIDE), r, port=port).findings
            if f.code == "E_PORT"
        ]
        assert taken.message == f"port {port} is already in use on this machine"
        assert "E_PORT" not in codes(check_recipe(resolve_recipe(GUIDE), rig(), port=port))


def test_a_port_with_only_time_wait_connections_is_free():
    """An engine just stopped leaves its connections in TIME_WAIT; a new engine binds there fine."""
    from rigbook.preflight.checks.host import port_taken

    listener = socket.socket()
    listener.setsockopt(
        socket.SOL_SOCKET, socket.SO_REUSEADDR, 1
    )  # as uvicorn, llama-server and vLLM do
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    served, _ = listener.accept()
    served.close()  # the server side closes first: its end of the connection waits in TIME_WAIT
    listener.close()
    client.close()
    assert not port_taken(port)


def test_saved_copy_test_failure_is_e_p2p_and_skip_is_w_p2p_test():
    r = rig()
    r.p2p_test = P2PTest.model_validate(
        {
            "backend": "torch",
            "size_mib": 256,
            "pairs": [{"a": 0, "b": 1, "verified": False, "error": "RuntimeError: peer mapping"}],
        }
    )
    [p2p] = [f for f in check_recipe(resolve_recipe(GUIDE), r).findings if f.code == "E_P2P"]
    assert "copy test failed (torch): RuntimeError: peer mapping" in p2p.message
    r.p2p_test = P2PTest(size_mib=256, skipped="neither PyTorch nor CuPy is importable")
    [skip] = [f for f in check_recipe(resolve_recipe(GUIDE), r).findings if f.code == "W_P2P_TEST"]
    assert "neither PyTorch nor CuPy" in skip.message


def test_non_commercial_artifact_license():
    recipe = resolve_recipe(EMBEDDED)
    recipe.artifacts[0].license = "CC-BY-NC-4.0"
    [lic] = [f for f in check_recipe(recipe, rig()).findings if f.code == "W_LICENSE"]
    assert "CC-BY-NC-4.0" in lic.message


@pytest.mark.parametrize("gpus", [[5], [0, 0]])
def test_bad_gpu_pick_is_input_error(gpus):
    with pytest.raises(InputError) as exc:
        check_recipe(resolve_recipe(GUIDE), rig(), gpus=gpus)
    assert exc.value.code == "E_INPUT"
