"""Each synthetic rig against the catalog recipes gives exactly the findings a user would expect."""

from __future__ import annotations

import pytest

from rigbook.preflight.check import check_recipe
from rigbook.recipe.resolve import resolve_recipe
from rigbook.rig.model import load_rig
from tests.conftest import FIXTURES, SEED_RECORD

GUIDE = "glm-5-3-flash-exl3-on-2x-rtx-pro-6000-blackwell-tensorfold-300w"
SEED = "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3"
FOUR = "glm-5-3-flash-on-4x-rtx-pro-6000-blackwell-tensorfold-250w"
EMBEDDED = "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp"

CASES = [
    ("2x-rtx-pro-6000-300w", GUIDE, None, [("W_LICENSE", [])]),
    (
        "2x-rtx-pro-6000-300w",
        SEED,
        None,
        [("W_GPU_VARIANT", [0, 1]), ("W_POWER", [0]), ("W_POWER", [1])],
    ),
    (
        "2x-rtx-pro-6000-300w",
        str(SEED_RECORD),
        None,
        [("W_GPU_VARIANT", [0, 1]), ("W_POWER", [0]), ("W_POWER", [1])],
    ),
    ("2x-rtx-pro-6000-300w", EMBEDDED, None, []),
    (
        "2x-rtx-pro-6000-300w",
        FOUR,
        None,
        [("E_GPU_COUNT", [0, 1]), ("W_POWER", [0]), ("W_POWER", [1])],
    ),
    ("2x-rtx-pro-6000-300w-p2p-broken", GUIDE, None, [("E_P2P", [0, 1]), ("W_LICENSE", [])]),
    (
        "4x-rtx-pro-6000-250w-one-busy",
        FOUR,
        None,
        [
            ("W_GPU_BUSY", [3]),
            ("W_TOPOLOGY", [0, 2]),
            ("W_TOPOLOGY", [0, 3]),
            ("W_TOPOLOGY", [1, 2]),
            ("W_TOPOLOGY", [1, 3]),
        ],
    ),
    (
        "4x-rtx-pro-6000-250w-one-busy",
        GUIDE,
        None,
        [("W_POWER", [0]), ("W_POWER", [1]), ("W_LICENSE", [])],
    ),
    (
        "4x-rtx-pro-6000-250w-one-busy",
        GUIDE,
        [2, 3],
        [
            ("E_GPU_MEMORY", [3]),
            ("W_GPU_BUSY", [3]),
            ("W_POWER", [2]),
            ("W_POWER", [3]),
            ("W_LICENSE", []),
        ],
    ),
    ("2x-rtx-pro-6000-250w", GUIDE, None, [("W_POWER", [0]), ("W_POWER", [1]), ("W_LICENSE", [])]),
    (
        "no-driver",
        GUIDE,
        None,
        [
            ("E_GPU_COUNT", []),
            ("E_DRIVER", []),
            ("E_TOOLKIT", []),
            ("E_TOOL", []),
            ("W_LICENSE", []),
            ("I_NO_GPU", []),
        ],
    ),
    (
        "no-driver",
        SEED,
        None,
        [("E_GPU_COUNT", []), ("E_DRIVER", []), ("E_TOOLKIT", []), ("I_NO_GPU", [])],
    ),
    ("no-driver", EMBEDDED, None, [("I_NO_GPU", [])]),
]


@pytest.mark.parametrize(
    ("rig_name", "recipe", "gpus", "expected"),
    CASES,
    ids=[f"{c[0]}:{c[1].rsplit('/', 1)[-1][:40]}:{c[2]}" for c in CASES],
)
def test_findings(rig_name, recipe, gpus, expected):
    rig = load_rig(FIXTURES / "rigs" / f"{rig_name}.rig.json")
    report = check_recipe(resolve_recipe(recipe), rig, gpus=gpus)
    assert [(f.code, f.gpus) for f in report.findings] == expected
    assert report.ok == (not any(code.startswith("E_") for code, _ in expected))


def test_messages_carry_the_numbers():
    rig = load_rig(FIXTURES / "rigs" / "4x-rtx-pro-6000-250w-one-busy.rig.json")
    report = check_recipe(resolve_recipe(GUIDE), rig, gpus=[2, 3])
    memory = next(f for f in report.findings if f.code == "E_GPU_MEMORY")
    assert "35288 MiB free" in memory.message and "needs 90000 MiB" in memory.message
    assert "pid 4242 python3 (61440 MiB)" in memory.message
    power = next(f for f in report.findings if f.code == "W_POWER" and f.gpus == [3])
    assert "250 W" in power.message and "300 W" in power.message
    assert "`sudo nvidia-smi -i 3 -pl 300`" in power.remedy


def test_broken_p2p_remedy_names_what_on_this_rig_breaks_it():
    rig = load_rig(FIXTURES / "rigs" / "2x-rtx-pro-6000-300w-p2p-broken.rig.json")
    [p2p] = [f for f in check_recipe(resolve_recipe(GUIDE), rig).findings if f.code == "E_P2P"]
    assert "CHIPSET_NOT_SUPPORTED" in p2p.message
    assert "ACS" in p2p.remedy and "IOMMU" in p2p.remedy
    assert "iommu=pt" in p2p.remedy and "ReqRedir" not in p2p.message


def test_below_default_power_without_recipe_power():
    rig = load_rig(FIXTURES / "rigs" / "2x-rtx-pro-6000-300w.rig.json")
    power = [f for f in check_recipe(resolve_recipe(SEED), rig).findings if f.code == "W_POWER"]
    assert "below the card's default 600 W" in power[0].message
    assert "`sudo nvidia-smi -i 0 -pl 600`" in power[0].remedy
