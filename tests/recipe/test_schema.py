import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rigbook.errors import RecipeInvalid
from rigbook.recipe import dump_recipe, list_recipes, parse_recipe, recipe_hash
from rigbook.recipe.schema import Recipe
from tests.conftest import SEED_RECORD


def test_seed_record_round_trips_to_the_same_json_value(seed_record):
    recipe = parse_recipe(seed_record)
    assert dump_recipe(recipe) == seed_record
    # Not only the same value: the same text, numbers included (207 stays 207, not 207.0).
    assert json.dumps(dump_recipe(recipe), sort_keys=True) == json.dumps(
        seed_record, sort_keys=True
    )


def test_metrics_stays_a_string_and_is_exposed_parsed(seed_record):
    recipe = parse_recipe(seed_record)
    perf = recipe.performance[0]
    assert isinstance(dump_recipe(recipe)["performance"][0]["metrics"], str)
    parsed = perf.metrics_parsed
    assert parsed.tok_s == 207
    assert [p.decode_tok_s for p in parsed.points[:3]] == [207, 488, 672]


def test_unknown_fields_are_kept_at_every_level(seed_record):
    newer = copy.deepcopy(seed_record)
    newer["future_top_level"] = {"x": 1}
    newer["hardware"][0]["pcie_lanes"] = 16
    newer["perf_points"][0]["energy_wh"] = 0.5
    assert dump_recipe(parse_recipe(newer)) == newer


def test_a_broken_record_names_each_bad_field(seed_record):
    broken = copy.deepcopy(seed_record)
    broken["config"]["launch"] = "docker run"  # a string, not argv
    broken["hardware"][0]["device_count"] = "two"
    broken["perf_points"][1]["concurrency"] = 0
    broken["performance"][0]["metrics"] = "{not json"
    del broken["title"]
    with pytest.raises(RecipeInvalid) as info:
        parse_recipe(broken)
    text = "\n".join(info.value.details)
    for path in (
        "config.launch",
        "hardware.0.device_count",
        "perf_points.1.concurrency",
        "performance.0.metrics",
        "title",
    ):
        assert path in text
    assert info.value.code == "E_RECIPE_INVALID"


def test_catalog_holds_the_five_seed_recipes_with_the_seed_numbers():
    recipes = {r.slug: r for r in list_recipes()}
    # the five the seeds describe, rigbook's measured GPU recipe, the vLLM CPU one, the docker one,
    # the n-gram one
    assert len(recipes) == 9
    guide2 = recipes["glm-5-3-flash-exl3-on-2x-rtx-pro-6000-blackwell-tensorfold-300w"]
    assert [p.decode_tok_s for p in guide2.perf_points] == [238.3, 448.7]
    assert guide2.perf_points[1].per_request_decode_tok_s_median == 114.9
    assert guide2.ext.power_limit_w_per_gpu == 300
    assert guide2.ext.serve.port == 8022 and guide2.ext.serve.model_id == "glm-5.3-flash"
    assert guide2.ext.speculative.alternative_single_request_only is True
    guide4 = recipes["glm-5-3-flash-on-4x-rtx-pro-6000-blackwell-tensorfold-250w"]
    assert [p.decode_tok_s for p in guide4.perf_points] == [265.9, 1063.6]
    assert guide4.gpu_count == 4 and guide4.ext.power_limit_w_per_gpu == 250
    tp4 = recipes["glm-5-3-flash-qad-csf-on-4x-rtx-pro-6000-blackwell-tp4-reference"]
    assert [p.decode_tok_s for p in tp4.perf_points] == [306, 694, 962]
    embedded = recipes["smollm2-135m-instruct-q4-1-on-cpu-llama-cpp"]
    assert embedded.gpu_count == 0 and embedded.license == "Apache-2.0"


def test_catalog_seed_entry_keeps_every_public_field(seed_record):
    entry = next(r for r in list_recipes() if r.slug == seed_record["slug"])
    dumped = dump_recipe(entry)
    assert set(seed_record) <= set(dumped)
    assert dumped["config"] == seed_record["config"]
    assert dumped["rigbook"]["launch"]["env"]["TP"] == "2"


def test_hash_ignores_storage_fields_and_sees_content(seed_record):
    base = recipe_hash(parse_recipe(seed_record))
    moved = copy.deepcopy(seed_record)
    moved["revision"]["no"] = 3
    moved["updated_at"] = "2027-01-01"
    moved["perf_points"][0]["id"] = 99
    assert recipe_hash(parse_recipe(moved)) == base
    changed = copy.deepcopy(seed_record)
    changed["config"]["launch"].append("--extra")
    assert recipe_hash(parse_recipe(changed)) != base
    assert base.startswith("sha256:") and len(base) == 71


def test_hash_does_not_depend_on_key_order(seed_record):
    reordered = json.loads(json.dumps(seed_record, sort_keys=True))
    assert recipe_hash(parse_recipe(reordered)) == recipe_hash(parse_recipe(seed_record))


@settings(max_examples=50, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        # Integers as wide as a recipe may hold (64 bits).
        st.one_of(st.integers(-(2**63), 2**64 - 1), st.text(max_size=5), st.none()),
        max_size=4,
    )
)
def test_arbitrary_extra_fields_survive_the_round_trip(extra):
    record = json.loads(SEED_RECORD.read_text())
    record["speeds"].update({f"x_{k}": v for k, v in extra.items()})
    assert dump_recipe(parse_recipe(record)) == record


def test_schema_is_a_json_schema():
    schema = Recipe.model_json_schema(by_alias=True)
    assert "slug" in schema["properties"] and "rigbook" in schema["properties"]


def test_hash_follows_the_documented_steps_on_the_raw_record(seed_record):
    """docs/recipe.md's recipe, applied by hand to the record as published, gives rigbook's hash."""
    import hashlib

    content = {
        k: v
        for k, v in seed_record.items()
        if k not in ("revision", "links", "created_at", "updated_at", "speeds")
    }
    content["perf_points"] = [
        {k: v for k, v in p.items() if k != "id"} for p in content["perf_points"]
    ]
    text = json.dumps(
        content, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    assert (
        recipe_hash(parse_recipe(seed_record))
        == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    )
