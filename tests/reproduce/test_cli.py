"""`rigbook reproduce` on the command line: dry run, the --yes rule, a blocking check, bad input."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.helpers import synthetic_server
from tests.in_process import rigbook_here as rigbook
from tests.reproduce.test_synthetic import truth_recipe

SEED = "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3"


def test_dry_run_prints_every_step_and_each_assumption() -> None:
    # Exit 2 where the plan has an error finding on this machine (no GPU, no room for the weights),
    # as `up --dry-run`; the steps are printed all the same.
    done = rigbook("reproduce", SEED, "--dry-run")
    assert done.returncode in (0, 2), done.stderr
    out = done.stdout
    assert "dry run" in out and "docker" in out
    assert "then: bench seed profile at concurrency 1, 4, 8, 400-token replies" in out
    assert "then: stop the engine" in out
    assert "rate definition not stated; read as one request's decode rate" in out
    as_json = json.loads(rigbook("reproduce", SEED, "--dry-run", "--json").stdout)
    assert as_json["plan"]["dry_run"] is True and len(as_json["then"]) >= 3
    embedded = rigbook("reproduce", "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp", "--dry-run")
    assert embedded.returncode == 0, embedded.stderr
    assert "then: bench seed profile at concurrency 1, 4" in embedded.stdout
    assert "the recipe states no performance claim" in embedded.stdout


def test_a_check_error_stops_before_anything_starts() -> None:
    # The seed recipe needs two GPUs; this machine has none.
    done = rigbook("reproduce", SEED, "--yes", "--json")
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert error["code"] in ("E_GPU_COUNT", "E_DRIVER", "E_DOCKER", "E_GPU_MEMORY")
    assert json.loads(rigbook("status", "--json").stdout) == []


def test_without_a_terminal_or_yes_nothing_is_started(tmp_path: Path) -> None:
    with synthetic_server("--rate 50") as url:
        recipe = truth_recipe(tmp_path, url, [50.0])
        done = rigbook("reproduce", str(recipe), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "error[E_CONFIRM]" in done.stderr
    assert not (tmp_path / "out" / "result.json").exists()


def test_bad_levels_are_input_errors() -> None:
    done = rigbook("reproduce", SEED, "--concurrency", "0,4", "--dry-run", "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["error"]["code"] == "E_INPUT"
    done = rigbook("reproduce", "no-such-recipe", "--dry-run", "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"] == "E_RECIPE_NOT_FOUND"


def test_the_whole_loop_prints_the_verdict_table(tmp_path: Path) -> None:
    # 80 tok/s: each repeat's two 16-token replies take a fifth of a second each.
    with synthetic_server("--rate 80 --falloff 0 --tokens-per-chunk 1") as url:
        recipe = truth_recipe(tmp_path, url, [21.0])
        done = rigbook(
            "reproduce",
            str(recipe),
            "--yes",
            "--profile",
            "quick",
            "--max-tokens",
            "16",
            "--concurrency",
            "1",
            "--requests",
            "2",
            "--max-repeats",
            "3",
            "--out",
            str(tmp_path / "out"),
        )
    assert done.returncode == 0, done.stderr
    assert "LIVE on port" in done.stdout and "claims against this rig" in done.stdout
    assert "cell concurrency 1: aggregate" in done.stdout and "21.0" in done.stdout
    assert "result, comparison and report in" in done.stdout
