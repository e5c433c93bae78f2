import json
import subprocess
import sys

from tests.conftest import SEED_RECORD


def rigbook(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rigbook", *args], capture_output=True, text=True, timeout=60
    )


def test_validate_accepts_the_seed_record():
    done = rigbook("recipe", "validate", str(SEED_RECORD), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["valid"] is True


def test_validate_rejects_a_broken_record_with_field_paths_and_no_traceback(tmp_path, seed_record):
    seed_record["hardware"][0]["device_count"] = "two"
    seed_record["config"] = {"launch": 5}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(seed_record))
    done = rigbook("recipe", "validate", str(bad))
    assert done.returncode == 2
    assert "hardware.0.device_count" in done.stderr and "config.launch" in done.stderr
    assert "E_RECIPE_INVALID" in done.stderr and "Traceback" not in done.stderr


def test_validate_rejects_invalid_json_and_missing_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{ nope")
    assert rigbook("recipe", "validate", str(bad)).returncode == 2
    missing = rigbook("recipe", "validate", str(tmp_path / "none.json"))
    assert missing.returncode == 2 and "E_RECIPE_NOT_FOUND" in missing.stderr


def test_recipes_list_shows_the_catalog_and_show_prints_the_record_as_loaded(seed_record):
    listed = json.loads(rigbook("recipes", "list", "--json").stdout)
    assert len(listed) == 9
    shown = json.loads(rigbook("recipe", "show", "--file", str(SEED_RECORD), "--json").stdout)
    assert shown == seed_record


def test_search_and_hash():
    found = json.loads(rigbook("recipes", "search", "smollm2 cpu", "--json").stdout)
    assert sorted(r["slug"] for r in found) == [
        "smollm2-135m-instruct-on-cpu-vllm",
        "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp",
        "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp-docker",
        "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp-ngram",
    ]
    hashed = rigbook("recipe", "hash", str(SEED_RECORD))
    assert hashed.returncode == 0 and hashed.stdout.startswith("sha256:")
    unknown = rigbook("recipes", "show", "no-such-recipe")
    assert unknown.returncode == 2 and "E_RECIPE_NOT_FOUND" in unknown.stderr


def test_list_keeps_every_slug_whole_on_a_narrow_and_a_wide_terminal():
    import os

    slugs = [r["slug"] for r in json.loads(rigbook("recipes", "list", "--json").stdout)]
    for columns in ("80", "160"):
        done = subprocess.run(
            [sys.executable, "-m", "rigbook", "recipes", "list"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "COLUMNS": columns},
        )
        assert done.returncode == 0, done.stderr
        assert all(len(line) <= int(columns) for line in done.stdout.splitlines())
        assert all(slug in done.stdout for slug in slugs), done.stdout
