"""`up` end to end with small script recipes: what it prints, which log it reads, its lock, its clone, its names."""

import json
import subprocess
import sys
import time
from pathlib import Path

from rigbook.launch.planner import build_plan
from rigbook.launch.run import run_fetch_steps
from rigbook.recipe import load_recipe_file
from tests.conftest import free_port
from tests.in_process import rigbook_here
from tests.launch.helpers import GUIDE, RIG_2X, rigbook, write_recipe

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def git_repo(tmp_path: Path, files: dict[str, str] | None = None) -> tuple[str, str, str]:
    """A local repository with notes.txt at "v1", a patch (in the repository) that makes it "v2", and ``files``.

    Returns its file:// URL, its commit and the patch's path inside it.
    """
    repo = tmp_path / "upstream"
    (repo / "patches").mkdir(parents=True)
    (repo / "notes.txt").write_text("v1\n")
    (repo / "patches" / "v2.patch").write_text(
        "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-v1\n+v2\n"
    )
    for name, text in (files or {}).items():
        (repo / name).write_text(text)
    subprocess.run([*GIT, "init", "-q", str(repo)], check=True)
    subprocess.run([*GIT, "-C", str(repo), "add", "."], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "-q", "-m", "init"], check=True)
    commit = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    return f"file://{repo}", commit, "patches/v2.patch"


def script_recipe(tmp_path: Path, slug: str, code: str, **launch) -> Path:
    """A script recipe whose start runs ``code`` (its start.py) in Python, from a fresh local repository.

    The recipe serves on a port free now, passed to the script as its first argument: a fixed port
    in the ephemeral range can be any test's client socket at that moment (CI once hit E_PORT).
    """
    url, commit, _ = git_repo(tmp_path / slug, {"start.py": code})
    port = free_port()
    return write_recipe(
        tmp_path,
        slug,
        {
            "kind": "script_repo",
            "git_url": url,
            "commit": commit,
            "start": [sys.executable, "start.py", str(port)],
            **launch,
        },
        serve={"port": port},
    )


def test_up_yes_prints_the_warnings_and_the_start_command_before_it_goes_on(tmp_path):
    path = script_recipe(tmp_path, "warns", "import sys; sys.exit(3)")
    recipe = json.loads(path.read_text())
    recipe["hardware"] = [
        {"slug": "x", "vendor": "nvidia", "card": "RTX PRO 6000 Blackwell", "device_count": 2}
    ]
    recipe["rigbook"]["power_limit_w_per_gpu"] = 250
    path.write_text(json.dumps(recipe))
    done = rigbook("up", str(path), "--yes", "--rig", str(RIG_2X))
    assert (
        done.returncode == 2 and "error[E_ENGINE_EXIT]" in done.stderr
    )  # the start fails after the output
    assert "warning[W_POWER]" in done.stdout
    command = next(line for line in done.stdout.splitlines() if "$ " in line)
    assert "CUDA_VISIBLE_DEVICES=0,1" in command and f"{sys.executable} start.py " in command


def test_an_earlier_runs_log_line_does_not_explain_a_new_failure(tmp_path, rigbook_home):
    logs = rigbook_home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "fails.log").write_text(
        "ERROR:    [Errno 98] error while attempting to bind on address: address already in use\n"
    )
    path = script_recipe(
        tmp_path,
        "fails",
        "import sys; print('ValueError: unknown quantization nvfp5'); sys.exit(3)",
    )
    done = rigbook("up", str(path), "--yes", "--json")
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "E_ENGINE_EXIT" and "unknown quantization nvfp5" in error["message"]


def test_a_second_up_on_the_same_slot_is_refused_before_it_fetches_anything(tmp_path, rigbook_home):
    # The first launch's script dry run marks that it runs, then holds its fetch step in progress
    # until the test has tried the second (or a minute has passed).
    slow = (
        "import os, sys, time\nif os.environ.get('DRY_RUN'):\n    open(os.environ['MARK'], 'w').close()\n"
        "    end = time.monotonic() + 60\n"
        "    while not os.path.exists(os.environ['MARK'] + '.go') and time.monotonic() < end:\n"
        "        time.sleep(0.05)\n"
        "else:\n    sys.exit(3)\n"
    )
    marks = [tmp_path / "first.mark", tmp_path / "second.mark"]
    paths = [
        script_recipe(tmp_path, slug, slow, dry_run_env={"DRY_RUN": "1"}, env={"MARK": str(mark)})
        for slug, mark in zip(("first", "second"), marks, strict=True)
    ]
    first = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rigbook",
            "up",
            str(paths[0]),
            "--yes",
            "--json",
            "--allow",
            "env:MARK",
            # The mark is written outside the script's folder, which the sandbox would hide.
            "--allow",
            "no-sandbox",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not marks[0].exists() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.1)
        assert marks[0].exists(), "the first launch did not reach its fetch step"
        second = rigbook_here("up", str(paths[1]), "--yes", "--json", "--allow", "env:MARK")
        error = json.loads(second.stdout)["error"]
        assert error["code"] == "E_LOCKED" and "'first'" in error["message"]
        assert not marks[1].exists() and not (rigbook_home / "repos" / "second").exists()
    finally:
        Path(f"{marks[0]}.go").touch()
        first.wait(timeout=60)
    # The first one failed at its start: its lock is gone with it.
    assert json.loads(first.stdout.read())["error"]["code"] == "E_ENGINE_EXIT"
    assert not list((rigbook_home / "locks").glob("*.json"))


def test_a_patched_script_recipe_can_be_fetched_again(tmp_path):
    url, commit, patch = git_repo(tmp_path)
    path = write_recipe(
        tmp_path,
        "patched",
        {
            "kind": "script_repo",
            "git_url": url,
            "commit": commit,
            "patches": [patch],
            "start": ["true"],
        },
    )
    recipe = load_recipe_file(str(path))
    for _ in range(2):
        plan = build_plan(recipe, models_dir=tmp_path)
        run_fetch_steps(plan, progress=lambda message: None)
        clone = plan.target.work_dir / "patched"
        assert (clone / "notes.txt").read_text() == "v2\n"


def test_up_yes_without_a_recipe_never_auto_picks_a_gpu_recipe(rigbook_home):
    done = rigbook("up", "--yes", "--rig", str(RIG_2X), "--json")
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert (
        error["code"] == "E_INPUT"
        and GUIDE in error["message"]
        and f"rigbook up {GUIDE} --yes" in error["remedy"]
    )
    assert not (rigbook_home / "repos").exists() or not any((rigbook_home / "repos").iterdir())


def test_logs_and_down_refuse_a_name_that_leaves_rigbook_home(rigbook_home):
    secret = rigbook_home.parent / "secret.log"
    secret.write_text("TOKEN=hunter2\n")
    try:
        done = rigbook("logs", "../../secret")
        assert (
            done.returncode == 2
            and "error[E_INPUT]" in done.stderr
            and "hunter2" not in done.stdout
        )
        stopped = rigbook("down", "../../secret", "--json")
        assert json.loads(stopped.stdout)["error"]["code"] == "E_INPUT"
    finally:
        secret.unlink()


def test_a_second_launch_under_a_running_launchs_name_is_refused(rigbook_home):
    import os

    import psutil

    from rigbook.launch import state

    me = psutil.Process()
    state.save(
        state.RunState(
            name="taken",
            recipe="x",
            kind="llama_cpp",
            pid=os.getpid(),
            pgid=os.getpgid(0),
            create_time=me.create_time(),
            started_at=state.now_iso(),
            url="http://127.0.0.1:1",
            port=1,
            model_id=None,
            slot=["gpu-0"],
            log=str(rigbook_home / "x.log"),
            argv=["x"],
        )
    )
    done = rigbook(
        "up", "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp", "--name", "taken", "--yes", "--json"
    )
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert (
        error["code"] == "E_INPUT"
        and "'taken' already runs" in error["message"]
        and "rigbook down taken" in error["remedy"]
    )
    assert state.load("taken").pid == os.getpid()  # the running launch's state is untouched


HANGS_ON_SMOKE = """
import json, os, signal, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # an engine slow to stop: SIGKILL has to end it


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"data": [{"id": "m"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        open(os.environ["MARK"], "w").close()
        time.sleep(600)

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def test_ctrl_c_during_the_smoke_test_says_so_and_stops_the_engine(tmp_path, rigbook_home):
    import signal

    import psutil

    # In the script's clone: the one folder of its own that the sandbox lets it write.
    mark = rigbook_home / "repos" / "hangs" / "smoke.mark"
    path = script_recipe(tmp_path, "hangs", HANGS_ON_SMOKE, env={"MARK": str(mark)})
    up = subprocess.Popen(
        [sys.executable, "-m", "rigbook", "up", str(path), "--yes", "--allow", "env:MARK"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not mark.exists() and time.monotonic() < deadline and up.poll() is None:
            time.sleep(0.1)
        assert mark.exists(), "the smoke test did not start"
        engine_pid = json.loads((rigbook_home / "runs" / "hangs.json").read_text())["pid"]
        up.send_signal(signal.SIGINT)
        _, err = up.communicate(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
    assert up.returncode == 130
    assert "interrupted: stopping hangs" in err
    assert (
        not psutil.pid_exists(engine_pid)
        or psutil.Process(engine_pid).status() == psutil.STATUS_ZOMBIE
    )
    assert not list((rigbook_home / "locks").glob("*.json"))


SERVES = """
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    def _send(self, value):
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send({"data": [{"id": "m"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self._send({"choices": [{"message": {"content": "READY"}}]})

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def _count_resolutions(monkeypatch) -> dict[str, int]:
    """Count every call of launch_spec and of the danger screen, wherever the launch modules call
    them from."""
    import rigbook.launch.api
    import rigbook.launch.planner
    import rigbook.launch.run
    import rigbook.launch.screen
    import rigbook.launch.spec

    calls = {"launch_spec": 0, "target_dangers": 0, "recipe_dangers": 0}

    def counted(name, real):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)

        return wrapper

    for name, home in (
        ("launch_spec", rigbook.launch.spec),
        ("target_dangers", rigbook.launch.screen),
        ("recipe_dangers", rigbook.launch.screen),
    ):
        wrapped = counted(name, getattr(home, name))
        for module in (
            rigbook.launch.spec,
            rigbook.launch.screen,
            rigbook.launch.planner,
            rigbook.launch.run,
            rigbook.launch.api,
        ):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, wrapped)
    return calls


def test_one_up_resolves_its_launch_spec_once_and_screens_once(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from rigbook.cli.app import app

    port = free_port()
    url, commit, _ = git_repo(tmp_path / "serves", {"start.py": SERVES})
    # Through config.launch-free `rigbook.launch`, a script repo: the stub engine the tests use.
    path = write_recipe(
        tmp_path,
        "serves",
        {
            "kind": "script_repo",
            "git_url": url,
            "commit": commit,
            "start": [sys.executable, "start.py", str(port)],
        },
        serve={"port": port},
    )
    runner = CliRunner()

    calls = _count_resolutions(monkeypatch)
    dry = runner.invoke(app, ["up", str(path), "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    planned = json.loads(dry.stdout)
    assert planned["spec"]["kind"] == "script_repo" and planned["dangers"] == []
    assert calls == {"launch_spec": 1, "target_dangers": 1, "recipe_dangers": 0}

    calls = _count_resolutions(monkeypatch)
    try:
        live = runner.invoke(app, ["up", str(path), "--yes", "--json", "--timeout", "60"])
        assert live.exit_code == 0, live.output
        assert json.loads(live.stdout)["smoke"]["reply"] == "READY"
    finally:
        runner.invoke(app, ["down", "serves"])
    assert calls == {"launch_spec": 1, "target_dangers": 1, "recipe_dangers": 0}
