"""Let docker judge a docker recipe: create the container, read what docker would do, remove it.

The hand parser (:mod:`rigbook.launch.docker_args` with :mod:`rigbook.launch.safety`) reads
``docker run`` options the way docker should; this module asks docker itself. Where a daemon
answers and the image is present locally, the argv rigbook would run is given to ``docker create
--pull never``, the container is inspected (``HostConfig``, ``Mounts``, ``Config``), and then it
is removed with any volume that ``create`` made. Nothing is started, nothing is pulled.

What the container gets beyond a plain ``docker create IMAGE`` of the same image (so the
daemon's own defaults are not charged to the recipe) is a danger with the same ``--allow`` name
the hand parser uses. Where docker cannot judge (no client, no daemon, no local image, docker
refuses to create it), the hand parser's verdict stands and the judgement says why.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from rigbook.launch.docker_args import DockerRun, drop_docker_options
from rigbook.launch.rules import Danger
from rigbook.launch.rules.env import env_dangers
from rigbook.launch.safety import CONFINING, _gpu_device, _protected

# Options the docker client acts on by itself, on this machine, while it creates: it writes the
# container id to a file of the recipe's choosing, or reads host files into the container's
# config. The hand parser refuses them; the judge never lets the client act on them.
CLIENT_SIDE = {"--cidfile", "--env-file", "--label-file"}
# What the docker client needs to reach its daemon; nothing else of rigbook's environment is
# handed to it (a name-only `-e KEY` then copies no value of this machine into the judged
# container: the hand parser judges that name).
CLIENT_ENV = ("PATH", "HOME", "XDG_RUNTIME_DIR", "SSH_AUTH_SOCK")
TIMEOUT_S = 60


class Judgement(BaseModel):
    """Which judge decided a docker recipe's safety, why that one, and (docker's) dangers."""

    judge: Literal["docker", "hand"]
    reason: str
    dangers: list[Danger] = []


class DockerUnavailable(Exception):
    """Docker cannot judge: no client, no daemon, no local image, or it refused to create."""


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["docker", *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
            env={k: v for k, v in os.environ.items() if k in CLIENT_ENV or k.startswith("DOCKER_")},
        )
    except FileNotFoundError as exc:
        raise DockerUnavailable("the docker client is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise DockerUnavailable(f"docker did not answer within {TIMEOUT_S} s") from exc


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["no message"])[-1][:300]


def _image_id(image: str) -> str:
    done = _docker("image", "inspect", "--format", "{{.Id}}", image)
    if done.returncode == 0 and done.stdout.strip().startswith("sha256:"):
        return done.stdout.strip()
    if "No such image" in done.stderr or "No such object" in done.stderr:
        raise DockerUnavailable(f"image not present locally: {image}")
    if done.returncode == 0:
        raise DockerUnavailable(f"docker gave no image id for {image}: {done.stdout[:80]!r}")
    raise DockerUnavailable(f"no docker daemon answers ({_first_line(done.stderr)})")


def _volumes() -> set[str]:
    done = _docker("volume", "ls", "--quiet")
    return set(done.stdout.split()) if done.returncode == 0 else set()


def _json(*args: str) -> Any:
    done = _docker(*args)
    try:
        return json.loads(done.stdout) if done.returncode == 0 else None
    except json.JSONDecodeError:
        return None


def created(options: list[str], image: str) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """``docker inspect`` of a container created with ``options`` and ``image``, and the driver
    options of each volume it mounts; the container is removed again.

    ``--pull never`` comes last among the options, so a recipe's own ``--pull`` cannot win; a
    volume that did not exist before ``create`` made it is removed with the container.
    """
    name = f"rigbook-judge-{uuid.uuid4().hex[:16]}"
    before = _volumes()
    shown = None
    try:
        done = _docker("create", "--name", name, *options, "--pull", "never", image)
        # A failed create can still leave a container behind (a later step of it failed).
        shown = _json("container", "inspect", name)
        if done.returncode != 0:
            raise DockerUnavailable(f"docker would not create it: {_first_line(done.stderr)}")
        if not shown:
            raise DockerUnavailable("docker created the container but cannot inspect it")
        names = [m["Name"] for m in shown[0].get("Mounts") or [] if m.get("Name")]
        volumes = _json("volume", "inspect", *names) if names else None
        return shown[0], {v["Name"]: v.get("Options") or {} for v in volumes or []}
    finally:
        # Also after an interrupt between create and inspect: removing what is not there fails
        # harmlessly.
        _docker("container", "rm", "--force", "--volumes", name)
        made = {str(m.get("Name")) for m in (shown or [{}])[0].get("Mounts") or [] if m.get("Name")}
        if made - before:
            _docker("volume", "rm", *sorted(made - before))


@functools.lru_cache(maxsize=16)
def _baseline(image_id: str) -> dict[str, Any]:
    """A plain ``docker create`` of the image: the daemon's and the image's own defaults."""
    return created([], image_id)[0]


def _under(path: str, roots: list[Path]) -> bool:
    return any(
        path == os.path.realpath(r) or path.startswith(os.path.realpath(r).rstrip("/") + "/")
        for r in roots
    )


API_SOCKET = "/var/run/docker.sock"


def _api_socket(host: dict[str, Any]) -> bool:
    """``--use-api-socket``: the docker client adds the daemon's socket as a mount of its own
    (a ``-v`` of it is a bind like any other)."""
    return any(
        m.get("Type") == "bind" and m.get("Source") == API_SOCKET and m.get("Target") == API_SOCKET
        for m in host.get("Mounts") or []
    )


def _mount_dangers(
    mounts: list[dict[str, Any]],
    roots: list[Path],
    volume_options: dict[str, dict[str, str]],
    *,
    api_socket: bool,
) -> list[Danger]:
    found: list[Danger] = []
    for mount in mounts:
        kind, target = mount.get("Type"), mount.get("Destination", "?")
        if kind == "bind":
            source = os.path.realpath(mount.get("Source") or "/")
            if _under(source, roots):
                continue
            if api_socket and target == API_SOCKET and source == os.path.realpath(API_SOCKET):
                found.append(Danger("use-api-socket", "docker gives the container its API socket"))
                continue
            why = _protected(source)
            found.append(
                Danger(None, f"docker mounts {why} ({source}) at {target}")
                if why
                else Danger("bind-mount", f"docker mounts the host folder {source} at {target}")
            )
        elif kind == "volume":
            options = volume_options.get(mount.get("Name") or "", {})
            if mount.get("Driver") not in ("local", "", None) or options:
                found.append(
                    Danger(
                        None,
                        f"docker mounts the volume {mount.get('Name')} at {target} with driver "
                        f"{mount.get('Driver')} {options} (a volume that binds a host path or "
                        "device)",
                    )
                )
        elif kind not in ("tmpfs",):
            found.append(Danger(None, f"docker mounts a {kind} at {target}"))
    return found


def _device_dangers(host: dict[str, Any], gpus: set[str]) -> list[Danger]:
    found = [
        Danger("device", f"docker passes the host device {d.get('PathOnHost')} in")
        for d in host.get("Devices") or []
        if not _gpu_device(d.get("PathOnHost") or "", gpus)
    ]
    for request in host.get("DeviceRequests") or []:
        ids = set(request.get("DeviceIDs") or [])
        if request.get("Count") or not ids <= gpus or request.get("Driver") not in ("", "nvidia"):
            found.append(
                Danger(
                    "device",
                    f"docker passes devices {request.get('Capabilities')} "
                    f"(count {request.get('Count')}, ids {sorted(ids)}) beyond this launch's "
                    f"GPUs {sorted(gpus) or 'none'}",
                )
            )
    if host.get("DeviceCgroupRules"):
        found.append(
            Danger(
                "device-cgroup-rule",
                f"docker lets the container open devices {host['DeviceCgroupRules']}",
            )
        )
    return found


NAMESPACES = {
    "PidMode": ("pid", "pid-host"),
    "IpcMode": ("ipc", "ipc-host"),
    "NetworkMode": ("network", "network-host"),
    "UTSMode": ("uts", "uts-host"),
    "UsernsMode": ("user", "userns-host"),
    "CgroupnsMode": ("cgroup", "cgroupns-host"),
}


def _namespace_dangers(host: dict[str, Any], base: dict[str, Any]) -> list[Danger]:
    found: list[Danger] = []
    for field, (what, allow) in NAMESPACES.items():
        mode = str(host.get(field) or "")
        if mode == str(base.get(field) or ""):
            continue
        if mode.startswith("container:"):
            found.append(
                Danger("join-container", f"docker joins another container's {what} namespace")
            )
        elif mode == "host" and field != "IpcMode":
            # `--ipc host` is the docker kind's own (safety.DOCKER_KIND_NEEDS): tensor-parallel
            # engines share tensors through /dev/shm.
            found.append(Danger(allow, f"docker shares the host's {what} namespace ({field})"))
    return found


def _config_dangers(
    config: dict[str, Any], base_config: dict[str, Any], image: str
) -> list[Danger]:
    found: list[Danger] = []
    if config.get("Image") != image:
        found.append(
            Danger(None, f"docker would run the image {config.get('Image')!r}, not {image!r}")
        )
    changed = {
        field: config.get(field)
        for field in ("Entrypoint", "Cmd", "User", "WorkingDir")
        if config.get(field) != base_config.get(field)
    }
    if changed:
        found.append(Danger(None, f"docker would run the image with another {changed}"))
    base_env = set(base_config.get("Env") or [])
    added = [e for e in config.get("Env") or [] if e not in base_env]
    env = dict(e.partition("=")[::2] for e in added)
    return found + env_dangers(env, container=True)


def dangers_of(
    shown: dict[str, Any],
    base: dict[str, Any],
    *,
    image: str,
    gpus: set[str],
    roots: list[Path],
    volume_options: dict[str, dict[str, str]] | None = None,
) -> list[Danger]:
    """What the inspected container ``shown`` gets beyond ``base`` (a plain create of the image).

    ``gpus``: the GPUs (indices, UUIDs) this launch passes in; ``roots``: host folders that are
    rigbook's to mount (the models folder).
    """
    host, base_host = shown.get("HostConfig") or {}, base.get("HostConfig") or {}
    found: list[Danger] = []
    if host.get("Privileged"):
        found.append(Danger("privileged", "docker runs the container privileged"))
    if host.get("CapAdd"):
        found.append(Danger("cap-add", f"docker adds the capabilities {host['CapAdd']}"))
    found += _mount_dangers(
        shown.get("Mounts") or [], roots, volume_options or {}, api_socket=_api_socket(host)
    )
    if host.get("VolumesFrom"):
        found.append(Danger("volumes-from", f"docker mounts the volumes of {host['VolumesFrom']}"))
    found += _device_dangers(host, gpus)
    found += _namespace_dangers(host, base_host)
    # Docker itself adds `label=disable` to a privileged container or one with the host's IPC or
    # PID namespace; those are judged on their own.
    shares = "host" in (host.get("IpcMode"), host.get("PidMode")) or host.get("Privileged")
    implied = {"label=disable"} if shares else set()
    added_opts = [
        o
        for o in host.get("SecurityOpt") or []
        if o not in (base_host.get("SecurityOpt") or [])
        and o not in implied
        and o.replace(":", "=", 1).lower() not in CONFINING
    ]
    if added_opts:
        found.append(Danger("security-opt", f"docker sets the security options {added_opts}"))
    if host.get("CgroupParent"):
        found.append(
            Danger("cgroup-parent", f"docker places the container in {host['CgroupParent']}")
        )
    if host.get("Sysctls"):
        found.append(Danger(None, f"docker sets the kernel parameters {host['Sysctls']}"))
    if host.get("Runtime") != base_host.get("Runtime"):
        found.append(Danger(None, f"docker runs it with the runtime {host.get('Runtime')!r}"))
    if host.get("VolumeDriver") or host.get("LogConfig") != base_host.get("LogConfig"):
        found.append(
            Danger(
                None,
                f"docker changes the volume driver or log driver "
                f"({host.get('VolumeDriver')!r}, {host.get('LogConfig')})",
            )
        )
    if host.get("PublishAllPorts"):
        found.append(Danger(None, "docker publishes every exposed port on every interface"))
    return found + _config_dangers(shown.get("Config") or {}, base.get("Config") or {}, image)


def judge_run(run: DockerRun, *, gpus: set[str], roots: list[Path]) -> Judgement:
    """Docker's verdict on the container ``run`` would start; the hand parser's stands where
    docker cannot judge (the judgement says why)."""
    options = run.argv()[2:-1]  # `docker run` … IMAGE
    options, _ = drop_docker_options(options, CLIENT_SIDE | {"--name"})
    try:
        base = _baseline(_image_id(run.image))
        shown, volume_options = created(options, run.image)
    except DockerUnavailable as exc:
        return Judgement(judge="hand", reason=str(exc))
    return Judgement(
        judge="docker",
        reason="docker created the container (not started), was inspected and removed",
        dangers=dangers_of(
            shown, base, image=run.image, gpus=gpus, roots=roots, volume_options=volume_options
        ),
    )
