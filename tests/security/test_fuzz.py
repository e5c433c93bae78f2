"""A fuzzer: launch configs built from dangerous tokens, run through `plan` and `up` against fake
engines.

Fake ``docker`` and ``vllm`` executables on PATH, and fake ``sglang`` and
``llama_cpp`` packages on PYTHONPATH, only log their argv and environment. Each
example asserts that no marker file appears outside the sandbox (a token such
as ``$(touch MARKER)`` reached a shell), that nothing a rule refuses reaches an
argv or an environment that was run, and that no E_INTERNAL (or any uncoded
exception) occurs.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from rigbook.errors import RigbookError
from rigbook.launch.docker_args import parse_options
from rigbook.launch.placeholders import GPU_ENV_DEFAULTS
from rigbook.launch.planner import build_plan
from rigbook.launch.rules.env import SELECTION, env_dangers, never
from rigbook.launch.rules.table import table_dangers
from rigbook.launch.run import run_plan
from rigbook.launch.safety import docker_dangers
from rigbook.recipe import load_recipe_file
from rigbook.rig.model import load_rig
from tests.launch.helpers import RIG_2X

MARKER = Path("/tmp") / f"rigbook-fuzz-pwned-{uuid.uuid4().hex}"
TOKENS = [
    f"$(touch {MARKER})",
    f"`touch {MARKER}`",
    f"; touch {MARKER}",
    f"\ntouch {MARKER}",
    f"| touch {MARKER}",
    "../",
    "../../..",
    "/",
    "~",
    "-",
    "--",
    "=",
    "-v",
    "/:/host",
    "--privileged",
    "--ho",
    "--hos=0.0.0.0",
    "--port=0",
    "--serv",
    "--served-model-name",
    "--model",
    "--model_alias",
    "--trust-remote",
    "--config",
    "--cgroup-parent",
    "--device",
    "/dev/nvidia7",
    "--security-opt",
    "seccomp=/tmp/p.json",
    "--pid=host",
    "-e",
    "LD_PRELOAD=/x.so",
    "PATH=/tmp",
    "--env=PYTHONWARNINGS=all",
    "-c",
    "\x00",
    "٣",
    "²",
    "٨٠٨٠",
    "99999999999999999999",
    "0",
    "8080",
    "org/model",
    "${MODELS_DIR}/../../etc",
    "alpine",
    "-itv/etc:/e",
    "--mount=type=bind,source=/,target=/h",
    "é",
    "\u202e",
    "a" * 300,
]
ENV_NAMES = [
    "LD_PRELOAD",
    "PATH",
    "PYTHONWARNINGS",
    "BROWSER",
    "BASH_ENV",
    "NODE_OPTIONS",
    "GIT_SSH_COMMAND",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "HF_TOKEN",
    "HF_HOME",
    "VLLM_LOGGING_LEVEL",
    "NCCL_DEBUG",
    "OMP_NUM_THREADS",
    "TP",
    "MODEL",
    "PORT",
    "FOO",
    "ld_preload",
    "PYTHONPATH",
]
OPTIONS = [
    "--host",
    "--port",
    "--model",
    "--served-model-name",
    "--max-model-len",
    "--tensor-parallel-size",
    "--gpu-memory-utilization",
    "--volume",
    "--env",
    "--network",
    "--ipc",
    "--device",
    "--name",
]

# Benign tokens too, so a good share of examples gets past the rules and reaches a fake engine.
BENIGN = [
    "--max-model-len",
    "4096",
    "--tensor-parallel-size",
    "1",
    "--dtype=auto",
    "--ipc=host",
    "-v",
    "cache:/cache",
    "x",
]
token = st.one_of(
    st.sampled_from(BENIGN),
    st.sampled_from(BENIGN),
    st.sampled_from(TOKENS),
    st.text(max_size=12),
    st.builds(lambda o, t: f"{o}={t}", st.sampled_from(OPTIONS), st.sampled_from(TOKENS)),
    st.builds(lambda o, n: o[:n], st.sampled_from(OPTIONS), st.integers(2, 12)),
)
argv = st.lists(token, max_size=4)
env = st.dictionaries(st.one_of(st.sampled_from(ENV_NAMES), st.text(max_size=6)), token, max_size=3)
model = st.one_of(st.just("org/model"), token)
artifacts = st.lists(
    st.fixed_dictionaries(
        {
            "kind": st.just("model_weights"),
            "pointer_type": st.just("hf_model"),
            "pointer": st.one_of(
                st.just("https://huggingface.co/org/model"), token.map(lambda t: f"org/{t}")
            ),
            "pin": st.one_of(st.none(), st.just("0123456789abcdef0123456789abcdef01234567"), token),
        }
    ),
    max_size=1,
)
launch = st.one_of(
    st.fixed_dictionaries(
        {
            "kind": st.just("docker"),
            "image": st.one_of(st.just("example/engine:1"), token),
            "args": argv,
            "env": env,
        }
    ),
    st.fixed_dictionaries({"kind": st.just("vllm"), "model": model, "args": argv, "env": env}),
    st.fixed_dictionaries({"kind": st.just("sglang"), "model": model, "args": argv, "env": env}),
    st.fixed_dictionaries(
        {
            "kind": st.just("llama_cpp"),
            "model_path": st.just("${MODELS_DIR}/m.gguf") | token,
            "args": argv,
        }
    ),
)
config = st.fixed_dictionaries(
    {
        "launch": launch,
        "artifacts": artifacts,
        "device_count": st.sampled_from([0, 1, 2, 10**12]) | st.integers(-5, 5),
        "serve_port": st.none() | st.integers(-1, 70000),
        "port": st.none() | token,
        "gpus": st.none()
        | st.sampled_from(["0", "1", "0,1", "7", "٣", "-1", "0,0", "99999999999999999999"]),
    }
)

FAKE = """#!{python}
import json, os, sys
with open(os.environ["FUZZ_LOG"], "a") as log:
    log.write(json.dumps({{"argv": sys.argv, "env": dict(os.environ)}}) + "\\n")
"""


@pytest.fixture(scope="module")
def fakes(tmp_path_factory) -> Path:
    """bin/docker, bin/vllm, and the sglang and llama_cpp packages, each logging to $FUZZ_LOG."""
    root = tmp_path_factory.mktemp("fakes")
    code = FAKE.format(python=sys.executable)
    for name in ("docker", "vllm"):
        path = root / "bin" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(code)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    for module in ("sglang/launch_server.py", "llama_cpp/server/__main__.py"):
        path = root / "pkgs" / module
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
        for folder in (path.parent, path.parent.parent):
            if folder != root / "pkgs":
                (folder / "__init__.py").touch()
    # An installed `vllm` distribution, so the adapter takes the fake bin/vllm for vLLM's own
    # `vllm serve` (it asks the Python which distribution provides the vllm package).
    (root / "pkgs" / "vllm").mkdir()
    (root / "pkgs" / "vllm" / "__init__.py").touch()
    info = root / "pkgs" / "vllm-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.0.0\n")
    (info / "top_level.txt").write_text("vllm\n")
    return root


def _recipe(sandbox: Path, c: dict) -> Path:
    hardware = [
        {
            "slug": "x",
            "vendor": "nvidia",
            "card": "RTX PRO 6000 Blackwell",
            "device_count": c["device_count"],
        }
    ]
    recipe = {
        "slug": "fuzz",
        "title": "fuzz",
        "config": {"launch": []},
        "artifacts": c["artifacts"],
        "hardware": hardware if c["device_count"] else [],
        "rigbook": {
            "launch": c["launch"],
            **({"serve": {"port": c["serve_port"]}} if c["serve_port"] else {}),
        },
    }
    path = sandbox / "fuzz.json"
    path.write_text(json.dumps(recipe))
    return path


def _ran_cleanly(record: dict, inherited: dict[str, str]) -> None:
    """What a fake engine was given holds nothing the rules refuse."""
    argv = record["argv"]
    if Path(argv[0]).name == "docker" and argv[1:2] == ["version"]:
        return  # rigbook's own question to the daemon before it starts anything, not the engine
    added = {k: v for k, v in record["env"].items() if inherited.get(k) != v}
    for name, value in added.items():
        assert not never(name) or name in {
            "CUDA_VISIBLE_DEVICES",
            "CUDA_DEVICE_ORDER",
            "VLLM_HOST_IP",
        }, (
            name,
            value,
        )
    for name in SELECTION & set(added):
        assert name in {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"}
    program = Path(argv[0]).name
    models = Path(inherited["RIGBOOK_HOME"]).parent / "models"
    # rigbook's own: the GPU selection and multicast defaults, vLLM's listener address.
    own = {*GPU_ENV_DEFAULTS, *SELECTION, "VLLM_HOST_IP"}
    recipe_set = {k: v for k, v in added.items() if k not in own}
    assert env_dangers(recipe_set, kind=program if program == "vllm" else None) == []
    if program == "docker" and argv[1] == "run":
        options, _image_at = parse_options(argv[2:], stop_at_positional=True)
        # rigbook's own labels, which `down` finds its containers by, are not the recipe's.
        own_labels = [o for o in options if (o.value or "").startswith("org.rigbook.")]
        items = [t for o in options if o not in own_labels for t in o.tokens]
        # rigbook's own name-only `-e` items pass its multicast-off defaults through.
        own = {"ipc-host", *(f"env:{name}" for name in GPU_ENV_DEFAULTS)}
        assert [
            d for d in docker_dangers(items, gpus={"0", "1"}, roots=[models]) if d.allow not in own
        ] == []
    elif program == "vllm":
        # The recipe's args come before rigbook's own --host, --port (and served name).
        recipe_args = argv[3 : len(argv) - 1 - argv[::-1].index("--host")]
        assert table_dangers("vllm", recipe_args) == []
    assert not any("\x00" in a for a in argv)


def _run(c: dict, sandbox: Path, fakes: Path, *, up: bool) -> None:
    path = _recipe(sandbox, c)
    log = sandbox / "engine.log"
    log.unlink(missing_ok=True)
    outcome = "plan built"
    try:
        recipe = load_recipe_file(str(path))
        plan = build_plan(
            recipe,
            rig=load_rig(RIG_2X),
            gpus=c["gpus"],
            port=c["port"],
            models_dir=sandbox / "models",
            name="fuzz",
            # The fakes log to $FUZZ_LOG outside the engine's folder, which the sandbox hides.
            allow=["no-sandbox"],
        )
        if up:
            run_plan(plan, confirm=lambda p: True, progress=lambda m: None, timeout=3)
    except RigbookError as exc:
        assert exc.code != "E_INTERNAL", exc
        outcome = exc.code
    assert not MARKER.exists(), "a token reached a shell"
    event("an engine ran" if log.exists() else f"ended before an engine ran: {outcome}")
    if log.exists():
        inherited = dict(os.environ)
        for line in log.read_text().splitlines():
            _ran_cleanly(json.loads(line), inherited)
        log.unlink()


@pytest.fixture
def fuzz_env(fakes, tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("PATH", f"{fakes / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", f"{fakes / 'pkgs'}:{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.syspath_prepend(str(fakes / "pkgs"))
    monkeypatch.setenv("RIGBOOK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FUZZ_LOG", str(tmp_path / "engine.log"))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # closed: a download fails fast, coded
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # `make test` names the real vLLM's Python; here the fake on PATH must be the vLLM found.
    monkeypatch.delenv("RIGBOOK_VLLM_PYTHON", raising=False)
    (tmp_path / "models").mkdir()
    return tmp_path


FUZZ = settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def test_the_fakes_run_and_log_what_they_are_given(fuzz_env, fakes):
    # Without this the fuzzer could pass by never reaching an engine.
    clean = {
        "launch": {
            "kind": "vllm",
            "model": "org/model",
            "args": ["--max-model-len", "4096"],
            "env": {"VLLM_LOGGING_LEVEL": "DEBUG"},
        },
        "artifacts": [],
        "device_count": 1,
        "serve_port": None,
        "port": None,
        "gpus": None,
    }
    path = _recipe(fuzz_env, clean)
    recipe = load_recipe_file(str(path))
    plan = build_plan(
        recipe,
        rig=load_rig(RIG_2X),
        models_dir=fuzz_env / "models",
        name="fuzz",
        allow=["no-sandbox"],
    )
    with pytest.raises(RigbookError) as caught:
        # The fake exits at once; the timeout only bounds a loaded machine (3 s timed out there).
        run_plan(plan, confirm=lambda p: True, progress=lambda m: None, timeout=60)
    assert caught.value.code == "E_ENGINE_EXIT"
    record = json.loads((fuzz_env / "engine.log").read_text().splitlines()[0])
    assert (
        record["argv"][1:3] == ["serve", "org/model"]
        and record["env"]["VLLM_LOGGING_LEVEL"] == "DEBUG"
    )


@settings(FUZZ, max_examples=200)
@given(c=config)
def test_plan_never_fails_uncoded_and_nothing_reaches_a_shell(c, fuzz_env, fakes):
    _run(c, fuzz_env, fakes, up=False)


@settings(FUZZ, max_examples=60)
@given(c=config)
def test_up_runs_only_what_the_rules_let_through(c, fuzz_env, fakes):
    _run(c, fuzz_env, fakes, up=True)
    assert not MARKER.exists()
