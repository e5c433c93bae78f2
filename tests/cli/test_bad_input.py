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
    """A Ctrl-C once the entry point has armed its handler, while the commands still import.

    The signal is sent when the process says the handler is set, not after a fixed sleep: on a
    loaded machine a fixed sleep can land before Python has run any of rigbook's code, where no
    program can keep the interpreter's own KeyboardInterrupt from printing.
    """
    import signal

    armed = (
        "import signal, sys\n"
        "real = signal.signal\n"
        "def spy(sig, handler):\n"
        "    done = real(sig, handler)\n"
        "    signal.signal = real\n"
        "    print('armed', flush=True)\n"
        "    return done\n"
        "signal.signal = spy\n"
        "sys.argv = ['rigbook', 'recipes', 'list']\n"
        "from rigbook.cli.entry import main\n"
        "main()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", armed],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "armed\n"
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


ESC_RECIPE_TEXT = {
    "model_id": "smol\x1b]52;c;cm0gLXJmIH4K\x07",  # OSC 52: a clipboard write
    "arg": "\x1b[1A\x1b[2K",  # cursor up, erase the line: hides the line above
    "title": "t\x9b2J\u202e",  # C1 CSI clear-screen, a bidi override
}


def _escape_recipe(tmp_path, *, arg: bool = True) -> str:
    from rigbook.recipe import dump_recipe, get_recipe

    doc = dump_recipe(get_recipe(EMBEDDED))
    doc["slug"] = "escapes"
    doc["title"] = ESC_RECIPE_TEXT["title"]
    doc["rigbook"]["serve"]["model_id"] = ESC_RECIPE_TEXT["model_id"]
    if arg:
        doc["rigbook"]["launch"]["args"] = ["--threads", ESC_RECIPE_TEXT["arg"]]
    path = tmp_path / "escapes.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize("command", [("plan",), ("check",), ("recipes", "show")])
def test_recipe_control_characters_reach_the_terminal_only_escaped(tmp_path, command):
    done = rigbook(
        *command,
        _escape_recipe(tmp_path),
        *(() if command[0] == "recipes" else ("--rig", str(_rig()))),
    )
    shown = done.stdout + done.stderr
    assert done.returncode in (0, 2) and "Traceback" not in shown, shown
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in shown
    if command == ("plan",):
        # The option table refuses the argument: the refusal quotes it, escaped.
        assert done.returncode == 2 and "\\x1b[1A\\x1b[2K" in shown


def test_a_plan_shows_recipe_text_escaped(tmp_path):
    done = rigbook("plan", _escape_recipe(tmp_path, arg=False), "--rig", str(_rig()))
    shown = done.stdout + done.stderr
    assert "\x1b" not in shown and "\x07" not in shown
    assert "smol\\x1b]52;c;cm0gLXJmIH4K\\x07" in shown, shown


def test_json_output_escapes_the_controls_json_itself_leaves_raw(tmp_path):
    done = rigbook("recipes", "show", _escape_recipe(tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    assert "\x9b" not in done.stdout and "\u202e" not in done.stdout
    assert json.loads(done.stdout)["title"] == ESC_RECIPE_TEXT["title"]  # the same string read back


def test_an_error_quoting_a_recipe_is_escaped_and_not_read_as_markup(tmp_path):
    path = tmp_path / "bad.json"
    launch = ["\x1b[2Jserve", "[bold]x[/bold]"]  # the error quotes a launch it cannot run
    path.write_text(json.dumps({"slug": "bad", "title": "t", "config": {"launch": launch}}))
    done = rigbook("plan", str(path), "--rig", str(_rig()))
    assert done.returncode == 2 and "error[E_RECIPE_INVALID]" in done.stderr
    assert "\x1b" not in done.stderr and "\\x1b[2Jserve [bold]x[/bold]" in done.stderr


def test_the_console_escapes_text_but_keeps_its_own_styles_and_drops_links():
    import io

    from rich.text import Text

    from rigbook.cli.output import SafeConsole

    out = io.StringIO()
    console = SafeConsole(file=out, force_terminal=True, color_system="standard", width=200)
    console.print("[bold]plan[/] \x1b[2Kgone", highlight=False)
    console.print(Text("x\x1b]52;c;AA==\x1b\\y"))  # a Text object, built outside the console
    console.print("[link=https://example.invalid]click[/link]")
    shown = out.getvalue()
    assert "\x1b[1m" in shown  # rich's own bold
    assert "\\x1b[2Kgone" in shown and "x\\x1b]52;c;AA==\\x1b\\y" in shown
    assert "\x1b]" not in shown and "click" in shown  # no OSC: no clipboard, no hyperlink


def _rig():
    from tests.launch.helpers import RIG_2X

    return RIG_2X
