"""`check` of a recipe's drafter: a non-commercial drafter is flagged with the alternative the
recipe offers (the guide's DFlash2 and its DRAFTER=mtp); a drafter of the checkpoint's own heads
under no stated license (the seed record's MTP) is not."""

from __future__ import annotations

import json

from rigbook.preflight.check import check_recipe
from rigbook.recipe.resolve import resolve_recipe
from rigbook.rig.model import load_rig
from tests.bench.helpers import rigbook
from tests.conftest import FIXTURES

GUIDE = "glm-5-3-flash-exl3-on-2x-rtx-pro-6000-blackwell-tensorfold-300w"
SEED = "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3"
RIG = FIXTURES / "rigs" / "2x-rtx-pro-6000-300w.rig.json"


def drafter_warnings(slug: str) -> list[str]:
    report = check_recipe(resolve_recipe(slug), load_rig(RIG))
    return [f.message for f in report.findings if f.code == "W_LICENSE" and "drafter" in f.message]


def test_the_guides_non_commercial_drafter_is_flagged_with_its_alternative():
    assert drafter_warnings(GUIDE) == [
        "drafter DFlash2: license non-commercial; the recipe's alternative: "
        "DRAFTER=mtp (serves one request at a time)"
    ]
    done = rigbook("check", GUIDE, "--rig", str(RIG), "--json")
    assert done.returncode == 0, done.stderr
    found = [f for f in json.loads(done.stdout)["findings"] if f["code"] == "W_LICENSE"]
    assert any("DRAFTER=mtp" in f["message"] for f in found), found


def test_the_seed_records_own_mtp_heads_are_not_flagged():
    assert drafter_warnings(SEED) == []


def test_a_non_commercial_drafter_without_an_alternative_says_there_is_none():
    recipe = resolve_recipe(SEED)
    assert recipe.ext.speculative is not None
    recipe.ext.speculative.drafter_license = "CC-BY-NC-4.0"
    report = check_recipe(recipe, load_rig(RIG))
    (message,) = [f.message for f in report.findings if f.code == "W_LICENSE"]
    assert message.startswith("drafter MTP3") and message.endswith(
        "license CC-BY-NC-4.0; the recipe offers no alternative"
    )
