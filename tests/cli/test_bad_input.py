"""Bad input on any command: a code, a remedy, exit 2, and with --json one JSON document — never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

EMBEDDED = "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp"


def rigbook(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rigbook", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    "args, code",
    [
        (("check", EMBEDDED, "--port", "abc"), "E_INPUT"),  # typer's own parse error, as JSON
        (("no-such-command",), "E_INPUT"),
        (("check", EMBEDDED, "--gpus", ""), "E_INPUT"),
        (("check", EMBEDDED, "--gpus", "0,0"), "E_INPUT"),
        (("rig", "--save", "/nonexistent-dir/rig.json", "--yes"), "E_FILE"),
        (("smoke", "http://[::1"), "E_INPUT"),
        (("bench", "http://[::1"), "E_INPUT"),
    ],
)
def test_json_errors(args, code):
    done = rigbook(*args, "--json")
    assert done.returncode == 2, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == code and error["remedy"] and "Traceback" not in done.stderr


def test_an_existing_save_file_is_not_overwritten_without_a_terminal_or_yes(tmp_path):
    target = tmp_path / "rig.json"
    target.write_text("mine")
    done = rigbook("rig", "--save", str(target))
    assert done.returncode == 2 and "error[E_CONFIRM]" in done.stderr and "--yes" in done.stderr
    assert target.read_text() == "mine"
    assert rigbook("rig", "--save", str(target), "--yes").returncode == 0
    assert json.loads(target.read_text())["schema_version"] == 1


def test_a_recipe_nested_thousands_deep_is_invalid_not_a_crash(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    done = rigbook("check", str(deep), "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["error"]["code"] == "E_RECIPE_INVALID"


def test_ctrl_c_while_the_cli_starts_ends_quietly():
    import signal
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "rigbook", "recipes", "list"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.15)  # inside the imports (they take about half a second)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=30)[1]
    assert "Traceback" not in err and proc.returncode in (130, -signal.SIGINT)


def test_an_unexpected_failure_is_one_e_internal_json_document_exiting_1(tmp_path):
    # A bug stands in for one: `rigbook codes` run with its printing broken underneath it.
    script = (
        "import sys, rigbook.cli.codes as c\n"
        "c.emit = lambda *args: 1 / 0\n"
        "from rigbook.cli.app import app\n"
        "from rigbook.cli.output import run_main\n"
        "sys.argv = ['rigbook', 'codes'] + sys.argv[1:]\n"
        "run_main(app)\n"
    )
    for extra in ([], ["--json"]):
        done = subprocess.run(
            [sys.executable, "-c", script, *extra], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 1 and "Traceback" not in done.stderr
        if extra:
            assert json.loads(done.stdout)["error"]["code"] == "E_INTERNAL"
        else:
            assert "error[E_INTERNAL]" in done.stderr and "ZeroDivisionError" in done.stderr
