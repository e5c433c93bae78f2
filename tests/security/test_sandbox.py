"""The sandbox around native engines: the plan shows it, and what a recipe's program does inside it
stays inside, with the option filter out of the way (the attack is added after every rule ran)."""

from __future__ import annotations

import itertools
import json
import sys
import sysconfig
import tempfile
import uuid
from pathlib import Path

import pytest

from rigbook.errors import LaunchError, RigbookError
from rigbook.launch import sandbox
from rigbook.launch.planner import build_plan
from rigbook.launch.run import run_fetch_steps
from rigbook.launch.supervisor import start
from rigbook.preflight.checks.sandbox import BWRAP_ENV
from rigbook.recipe import load_recipe_file
from tests.launch.helpers import RIG_2X, rigbook, write_recipe
from tests.launch.test_up import git_repo

SECRET = "hf_" + uuid.uuid4().hex
KEYS = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM6 owner@laptop\n"

# The recipe's own program: it tries each path given, says what happened, and reports what it sees.
PROBE = """\
import json, os, sys
seen = {}
for target in sys.argv[1:]:
    try:
        with open(target, "a") as handle:
            handle.write("planted by the recipe\\n")
        seen[target] = "written"
    except OSError as exc:
        seen[target] = type(exc).__name__
with open("own.txt", "w") as handle:
    handle.write("the script's own folder")
seen["environ"] = open("/proc/self/environ", "rb").read().decode(errors="replace")
seen["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print(json.dumps(seen))
"""


@pytest.fixture
def fake_home(tmp_path, monkeypatch) -> Path:
    """The user's home (HOME), with an authorized_keys and a shell profile; a secret in rigbook's
    environment."""
    home = tmp_path / "user"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text(KEYS)
    (home / ".bashrc").write_text("# profile\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setenv("RIGBOOK_TEST_SECRET", SECRET)
    return home


def _script_plan(tmp_path: Path, targets: list[str], allow: list[str]):
    launch = {
        "kind": "script_repo",
        "git_url": "https://example.invalid/x.git",
        "start": [sys.executable, "probe.py", *targets],
    }
    recipe = load_recipe_file(str(write_recipe(tmp_path, "probe", launch, serve={"port": 18022})))
    plan = build_plan(recipe, models_dir=tmp_path / "models", name="probe", allow=allow)
    # The clone `up` would have made.
    checkout = plan.target.work_dir / "probe"
    checkout.mkdir(parents=True)
    (checkout / "probe.py").write_text(PROBE)
    return plan, checkout


def _run_script(plan, tmp_path: Path) -> dict:
    assert plan.command is not None
    log = tmp_path / "probe.log"
    proc = start(plan.command, log)
    assert proc.wait(timeout=60) == 0, log.read_text()
    return json.loads(log.read_text().splitlines()[-1])


def test_the_plan_shows_the_sandbox_it_runs(tmp_path, fake_home, rigbook_home):
    plan, checkout = _script_plan(tmp_path, [], [])
    command = plan.command
    assert command is not None and command.sandbox[0].endswith("bwrap")
    shown = command.shown
    assert shown.startswith(command.sandbox[0]) and shown.endswith(f" {sys.executable} probe.py")
    items = command.sandbox
    pairs = {(items[i], items[i + 1]) for i in range(len(items) - 1)}
    assert ("--cap-drop", "ALL") in pairs and "--clearenv" in items and "--unshare-pid" in items
    assert ("--tmpfs", "/tmp") in pairs and ("--tmpfs", str(rigbook_home)) in pairs
    assert ("--chdir", str(checkout)) in pairs
    # The user's secret is not in what the engine is given; the recipe's env and HOME are.
    assert SECRET not in shown
    assert " -- /usr/bin/env -i " in shown
    assert f" HOME={sandbox.engine_folder(plan.target)} " in shown
    start_step = next(s for s in plan.steps if s.kind == "start")
    assert any("inside the sandbox" in d for d in start_step.details)


def test_a_script_that_writes_outside_its_folder_changes_nothing(tmp_path, fake_home, rigbook_home):
    marker = Path("/tmp") / f"pwned-{uuid.uuid4().hex}"
    pth = Path(sysconfig.get_paths()["purelib"]) / f"rigbook-sandbox-{uuid.uuid4().hex}.pth"
    targets = {
        "keys": fake_home / ".ssh" / "authorized_keys",
        "profile": fake_home / ".bashrc",
        "pth": pth,
        "state": rigbook_home / "runs" / "planted.json",
        "beside": rigbook_home / "repos" / "beside.txt",
        "tmp": marker,
    }
    plan, checkout = _script_plan(tmp_path, [str(p) for p in targets.values()], [])
    try:
        seen = _run_script(plan, tmp_path)
        assert (checkout / "own.txt").read_text() == "the script's own folder"
        assert (targets["keys"]).read_text() == KEYS
        assert (targets["profile"]).read_text() == "# profile\n"
        for name in ("pth", "state", "beside", "tmp"):
            assert not targets[name].exists(), name
        # Read-only system and venv: refused outright.
        assert seen[str(pth)] == "OSError"
        assert SECRET not in seen["environ"] and "HF_TOKEN" not in seen["environ"]
        assert len(seen["pids"]) <= 2  # its own PID namespace: no other process to read
    finally:
        pth.unlink(missing_ok=True)
        marker.unlink(missing_ok=True)


def test_without_the_sandbox_the_same_script_reaches_the_home(tmp_path, fake_home, rigbook_home):
    # The control: the probe's writes are real ones, so the sandboxed run above can fail.
    marker = Path("/tmp") / f"pwned-{uuid.uuid4().hex}"
    keys = fake_home / ".ssh" / "authorized_keys"
    plan, _ = _script_plan(tmp_path, [str(keys), str(marker)], ["no-sandbox"])
    assert plan.command is not None and plan.command.sandbox == []
    try:
        seen = _run_script(plan, tmp_path)
        assert keys.read_text() != KEYS and marker.exists()
        assert SECRET in seen["environ"]
    finally:
        marker.unlink(missing_ok=True)


def test_where_no_sandbox_can_be_made_native_kinds_are_refused_unless_allowed(tmp_path):
    path = write_recipe(
        tmp_path,
        "native",
        {"kind": "llama_server", "model_path": "${MODELS_DIR}/m.gguf"},
    )
    env = {BWRAP_ENV: str(tmp_path / "no-bwrap")}
    planned = rigbook("plan", str(path), "--json", env=env)
    assert planned.returncode == 2, planned.stderr
    findings = [f for s in json.loads(planned.stdout)["steps"] for f in s["findings"]]
    # The check step says why (W_SANDBOX); the start step refuses (E_UNSAFE, allowed by name).
    assert [f["code"] for f in findings if "sandbox" in f["message"]] == ["W_SANDBOX", "E_UNSAFE"]
    assert any("--allow no-sandbox" in f["remedy"] for f in findings)

    allowed = rigbook("up", str(path), "--dry-run", "--allow", "no-sandbox", "--json", env=env)
    assert allowed.returncode == 0, allowed.stdout
    shown = json.loads(allowed.stdout)
    assert shown["command"]["sandbox"] == []
    start_step = next(s for s in shown["steps"] if s["kind"] == "start")
    assert start_step["findings"] == []

    checked = rigbook("check", str(path), "--json", env=env)
    codes = [f["code"] for f in json.loads(checked.stdout)["findings"]]
    assert "W_SANDBOX" in codes and "E_UNSAFE" in codes and checked.returncode == 2


def test_a_docker_recipe_gets_no_bubblewrap(tmp_path):
    path = write_recipe(tmp_path, "box", {"kind": "docker", "image": "example/engine:1"})
    planned = rigbook("plan", str(path), "--rig", str(RIG_2X), "--json")
    assert planned.returncode == 0, planned.stdout
    command = json.loads(planned.stdout)["command"]
    assert command["argv"][:2] == ["docker", "run"] and command["sandbox"] == []


ENGINE = """#!{python}
import os
print("engine ran from", os.path.dirname(os.path.abspath(__file__)))
try:
    open({keys!r}).read()
    print("read the keys")
except OSError as exc:
    print("keys:", type(exc).__name__)
"""


@pytest.mark.parametrize("under", ["home", "tmp"])
def test_an_engine_installed_in_the_home_runs_and_the_rest_of_the_home_stays_hidden(
    tmp_path, fake_home, monkeypatch, under
):
    # A venv under ~ (as pyenv, uv or a user's own venv put them), or under /tmp (a clone there),
    # both folders the sandbox replaces: bound in read-only, alone.
    if under == "home":
        venv = fake_home / "venvs" / "llama"
    else:
        venv = Path(tempfile.mkdtemp(dir="/tmp")) / "llama"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
    program = venv / "bin" / "llama-server"
    keys = fake_home / ".ssh" / "authorized_keys"
    program.write_text(ENGINE.format(python=sys.executable, keys=str(keys)))
    program.chmod(0o755)
    monkeypatch.setenv("RIGBOOK_LLAMA_SERVER", str(program))
    path = write_recipe(
        tmp_path, "home-engine", {"kind": "llama_server", "model_path": "${MODELS_DIR}/m.gguf"}
    )
    plan = build_plan(load_recipe_file(str(path)), models_dir=tmp_path / "models")
    assert plan.command is not None and plan.command.argv[0] == str(program)
    items = plan.command.sandbox
    binds = {items[i + 1] for i, item in enumerate(items[:-1]) if item == "--ro-bind-try"}
    assert str(venv) in binds and str(fake_home) not in binds
    log = tmp_path / "engine.log"
    proc = start(plan.command, log)
    assert proc.wait(timeout=60) == 0, log.read_text()
    assert log.read_text().splitlines() == [
        f"engine ran from {venv / 'bin'}",
        "keys: FileNotFoundError",
    ]


def test_a_bubblewrap_that_cannot_make_namespaces_stops_up_and_check_says_why(
    tmp_path, monkeypatch
):
    # Installed, but refused by the kernel or a container's seccomp policy: found when tried.
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv(BWRAP_ENV, str(fake))
    plan, _ = _script_plan(tmp_path, [], [])
    assert plan.command is not None and plan.command.sandbox[0] == str(fake)
    with pytest.raises(LaunchError) as caught:
        start(plan.command, tmp_path / "probe.log")
    assert caught.value.code == "E_UNSAFE" and "No permissions" in caught.value.message
    assert "--allow no-sandbox" in (caught.value.remedy or "")
    path = write_recipe(
        tmp_path, "tried", {"kind": "llama_server", "model_path": "${MODELS_DIR}/m.gguf"}
    )
    checked = rigbook("check", str(path), "--json")
    found = [f for f in json.loads(checked.stdout)["findings"] if f["code"] == "W_SANDBOX"]
    assert len(found) == 1 and "No permissions" in found[0]["message"]


def test_the_scripts_own_dry_run_runs_in_the_sandbox_too(tmp_path, fake_home):
    keys = fake_home / ".ssh" / "authorized_keys"
    code = f"open({str(keys)!r}, 'a').write('planted')\n"
    url, commit, _ = git_repo(tmp_path, {"dry.py": code})
    launch = {
        "kind": "script_repo",
        "git_url": url,
        "commit": commit,
        "start": [sys.executable, "dry.py"],
        "dry_run_env": {"DRY_RUN": "1"},
    }
    recipe = load_recipe_file(str(write_recipe(tmp_path, "dry", launch)))
    plan = build_plan(recipe, models_dir=tmp_path / "models")
    dry = next(s for s in plan.steps if s.kind == "engine").commands[-1]
    assert dry.env["DRY_RUN"] == "1" and dry.sandbox[0].endswith("bwrap")
    with pytest.raises(RigbookError) as caught:
        run_fetch_steps(plan, progress=lambda message: None)
    # The write failed inside (the home is not there), so the dry run failed, and the file is as it was.
    assert caught.value.code == "E_ENGINE_EXIT" and "FileNotFoundError" in " ".join(
        caught.value.details
    )
    assert keys.read_text() == KEYS


def test_a_home_of_root_is_not_hidden(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", "/")
    plan, _ = _script_plan(tmp_path, [], [])
    assert plan.command is not None
    items = plan.command.sandbox
    assert ("--tmpfs", "/") not in set(itertools.pairwise(items))


READS_SECRETS = """\
import json, os, sys
seen = {}
for target in sys.argv[1:]:
    try:
        if os.path.isdir(target):
            seen[target] = sorted(os.listdir(target))
        else:
            with open(target, "rb") as handle:
                seen[target] = len(handle.read())
    except OSError as exc:
        seen[target] = type(exc).__name__
print(json.dumps(seen))
"""


@pytest.mark.skipif(not Path("/etc/shadow").is_file(), reason="this system has no /etc/shadow")
def test_the_systems_own_secrets_are_masked(tmp_path, fake_home, rigbook_home):
    """Run as root, an engine read the whole system (before: /etc/shadow read in full): the
    password hashes, SSH host keys and TLS private keys are masked (a file refused, a folder
    empty), the rest of /etc stays readable."""
    secrets = [p for p in sandbox.SYSTEM_SECRETS if Path(p).exists()]
    plan, checkout = _script_plan(tmp_path, [*secrets, "/etc/hostname"], [])
    (checkout / "probe.py").write_text(READS_SECRETS)
    seen = _run_script(plan, tmp_path)
    for secret in secrets:
        assert seen[secret] in (0, [], "PermissionError"), (secret, seen[secret])
    if Path("/etc/hostname").stat().st_size:
        assert seen["/etc/hostname"] > 0
