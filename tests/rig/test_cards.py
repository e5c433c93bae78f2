"""Card matching: the names NVML reports for cards our users own, against the card strings recipes write.

NVML names are from public nvidia-smi listings of each board; each case is its own test.
"""

from __future__ import annotations

import pytest

from rigbook.preflight.check import check_recipe
from rigbook.recipe.resolve import resolve_recipe
from rigbook.rig.cards import card_difference, parse_card
from rigbook.rig.model import load_rig
from tests.conftest import FIXTURES

GUIDE = "glm-5-3-flash-exl3-on-2x-rtx-pro-6000-blackwell-tensorfold-300w"

# (name NVML reports, recipe card string)
SAME = [
    ("NVIDIA H100 80GB HBM3", "H100"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB"),
    ("NVIDIA H100 PCIe", "H100"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA H800", "H800"),
    ("NVIDIA H800 80GB HBM3", "H800"),
    ("NVIDIA H800 80GB HBM3", "H800 SXM"),
    ("NVIDIA H800 PCIe", "H800 PCIe"),
    ("NVIDIA H200", "H200"),
    ("NVIDIA H200", "H200 SXM"),
    ("NVIDIA H200 NVL", "H200 NVL"),
    ("NVIDIA H200 NVL", "H200"),
    ("Tesla V100-SXM2-32GB", "V100"),
    ("Tesla V100-SXM2-32GB", "V100 SXM2"),
    ("Tesla V100-PCIE-16GB", "V100 16GB"),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB"),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM"),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe"),
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
    ("NVIDIA RTX 6000 Ada Generation", "NVIDIA RTX 6000 Ada Generation"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000 Blackwell"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX PRO 6000 Blackwell Max-Q"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell Server"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA GeForce RTX 5090", "RTX 5090"),
    ("NVIDIA GeForce RTX 3090", "RTX 3090"),
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA A10G", "A10G"),
    ("Quadro RTX 8000", "RTX 8000"),
    ("NVIDIA B200", "B200"),
]

# (name NVML reports, recipe card string, what the mismatch must say)
OTHER_MODEL = [
    ("NVIDIA A100-SXM4-80GB", "H100", "model A100, not H100"),
    ("NVIDIA H200", "H100", "model H200, not H100"),
    ("NVIDIA H800 80GB HBM3", "H100", "model H800, not H100"),
    ("Quadro RTX 6000", "RTX 6000 Ada", "model RTX 6000, not RTX 6000 ADA"),
    ("NVIDIA RTX 6000 Ada Generation", "RTX PRO 6000 Blackwell", "not RTX PRO 6000 BLACKWELL"),
    ("NVIDIA GeForce RTX 4090", "RTX 5090", "model RTX 4090, not RTX 5090"),
    ("NVIDIA L40", "L40S", "model L40, not L40S"),
]

OTHER_VARIANT = [
    ("NVIDIA H100 PCIe", "H100 SXM", "variant PCIe, not SXM"),
    ("NVIDIA H100 80GB HBM3", "H100 PCIe", "variant SXM, not PCIe"),
    ("NVIDIA H200 NVL", "H200 SXM", "variant NVL, not SXM"),
    ("NVIDIA H100 NVL", "H100 SXM", "variant NVL, not SXM"),
    ("Tesla V100-PCIE-32GB", "V100 SXM2", "variant PCIe, not SXM"),
    ("NVIDIA A100-SXM4-40GB", "A100 80GB", "memory 40 GB, not 80 GB"),
    (
        "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        "RTX PRO 6000 Blackwell Workstation Edition",
        "variant Max-Q Workstation, not Workstation",
    ),
]


@pytest.mark.parametrize(("nvml", "recipe"), SAME)
def test_nvml_name_is_the_recipes_card(nvml: str, recipe: str) -> None:
    assert card_difference(parse_card(nvml, reported=True), parse_card(recipe)) is None


@pytest.mark.parametrize(("nvml", "recipe", "says"), OTHER_MODEL + OTHER_VARIANT)
def test_mismatch_says_what_differs(nvml: str, recipe: str, says: str) -> None:
    difference = card_difference(parse_card(nvml, reported=True), parse_card(recipe))
    assert difference is not None and says in difference


def test_memory_type_is_not_part_of_the_model() -> None:
    card = parse_card("NVIDIA H100 80GB HBM3")
    assert card.model == ("h100",) and card.memory_gb == 80 and card.memory_type == "hbm3"


def test_recipe_card_without_variant_states_none() -> None:
    # Only a name NVML reported may be read as the SXM board; a recipe's "H200" accepts the NVL too.
    assert parse_card("H200").variant == ()
    assert parse_card("NVIDIA H200", reported=True).variant == ("sxm",)


def _check(nvml: str, recipe_card: str) -> list[tuple[str, str]]:
    recipe = resolve_recipe(GUIDE)
    recipe.hardware[0].card = recipe_card
    r = load_rig(FIXTURES / "rigs" / "2x-rtx-pro-6000-300w.rig.json")
    for g in r.gpus:
        g.name = nvml
    return [(f.code, f.message) for f in check_recipe(recipe, r).findings]


@pytest.mark.parametrize("recipe_card", ["H100", "H100 SXM"])
def test_check_accepts_a_real_h100(recipe_card: str) -> None:
    codes = [c for c, _ in _check("NVIDIA H100 80GB HBM3", recipe_card)]
    assert "E_GPU_MODEL" not in codes and "W_GPU_VARIANT" not in codes


def test_check_names_the_difference() -> None:
    found = dict(_check("NVIDIA A100-SXM4-80GB", "H100"))
    assert "model A100, not H100" in found["E_GPU_MODEL"]
    found = dict(_check("NVIDIA H100 PCIe", "H100 SXM"))
    assert "E_GPU_MODEL" not in found and "variant PCIe, not SXM" in found["W_GPU_VARIANT"]
