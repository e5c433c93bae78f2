"""A container image configured by env knobs: `docker run … -e TP=2 … IMAGE` (the seed record's
form).

rigbook runs the container in the foreground (its output is the engine log),
removes it on exit, names it ``rigbook-NAME`` and labels it with the launch and RIGBOOK_HOME so
`down` can stop it and the next `up` or `down` removes what a killed launch left, maps the
GPUs with ``--gpus`` and publishes the host port on loopback. The recipe's own
``-d``, ``--rm``, ``--name``, ``--gpus``, ``-p`` and ``-P`` are author-side and
replaced (``-i``/``-t`` are dropped: nothing is typed into the engine); ``--network
host`` is replaced by the published port unless you allow ``network-host``; on the host
network the ``PORT`` and ``HOST`` knobs are set to the port and address rigbook picked.
Fetched weights are mounted read-only at ``/models/ORG/NAME``, and an env knob
whose value is that repository (``MODEL=ORG/NAME``) is pointed at the mount, so
the container serves the pinned files instead of downloading the branch head.
"""

from __future__ import annotations

import shutil
from typing import ClassVar

from rigbook.launch.docker_args import (
    DockerRun,
    WeightsMount,
    drop_docker_options,
    split_model_options,
)
from rigbook.launch.docker_client import check_daemon, labels
from rigbook.launch.engines.base import Engine, step
from rigbook.launch.engines.llama_server import LlamaServerEngine
from rigbook.launch.engines.vllm import VllmEngine
from rigbook.launch.logscan import LogPattern
from rigbook.launch.placeholders import docker_gpus, gpu_env_defaults
from rigbook.launch.plan import LaunchCommand, StepKind, Target
from rigbook.launch.rules import Danger
from rigbook.launch.rules.env import env_dangers
from rigbook.launch.safety import docker_dangers
from rigbook.ports import port_or_none
from rigbook.recipe.hf import artifact_repo, weights_dir
from rigbook.recipe.schema import DockerLaunch, Recipe

# Long names (docker_args normalises `-p` to `--publish`, `-d` to `--detach` …).
AUTHOR_SIDE = {
    "--name",
    "--gpus",
    "--publish",
    "--publish-all",
    "--detach",
    "--rm",
    "--interactive",
    "--tty",
}
DEFAULT_CONTAINER_PORT = 8000


def container_name(target: Target) -> str:
    """The container's name, so `down` can stop it."""
    return f"rigbook-{target.name}"


def remove_command(name: str) -> LaunchCommand:
    """Remove the launch's container whatever its state (running, exited, Created), with its
    anonymous volumes (named ones stay); docker exits 0 when there is none."""
    return LaunchCommand(argv=["docker", "rm", "--force", "--volumes", f"rigbook-{name}"])


class DockerEngine(Engine):
    kind = "docker"
    # `docker run`'s own errors (exit 125, before the engine starts), then the lines of the
    # engines the images run, so a container's log maps to the same codes as a native launch.
    log_patterns: ClassVar[list[LogPattern]] = [
        LogPattern(
            code="E_DOCKER_IMAGE",
            pattern=r"No such image: |Unable to find image .* locally|pull access denied|"
            r"manifest unknown",
            why="the image is not here and was not pulled",
        ),
        LogPattern(
            code="E_TOOLKIT",
            pattern=r"could not select device driver .* with capabilities: \[\[gpu\]\]",
            why="Docker has no NVIDIA runtime (install the NVIDIA Container Toolkit)",
        ),
        LogPattern(
            code="E_DOCKER_DENIED",
            pattern=r"permission denied while trying to connect to the Docker daemon",
            why="docker's socket refused this user",
        ),
        LogPattern(
            code="E_DOCKER",
            pattern=r"Cannot connect to the Docker daemon",
            why="no docker daemon answers",
        ),
        *LlamaServerEngine.log_patterns,
        *VllmEngine.log_patterns,
    ]

    def network_host(self, target: Target) -> bool:
        return "network-host" in target.allow

    def container_port(self, spec: DockerLaunch) -> int:
        return (
            spec.container_port or port_or_none(spec.env.get("PORT", "")) or DEFAULT_CONTAINER_PORT
        )

    def host_knobs(self, spec: DockerLaunch, target: Target) -> dict[str, str]:
        """On the host network nothing is published: the image's PORT and HOST knobs, where the
        recipe sets them, are pointed at the port and address rigbook picked for this launch."""
        if not self.network_host(target):
            return {}
        picked = {"PORT": str(target.port), "HOST": target.host}
        return {key: value for key, value in picked.items() if key in spec.env}

    def url(self, spec: DockerLaunch, target: Target) -> str:
        # With the host network the engine listens on its own port, not a published one.
        port = target.port
        if self.network_host(target) and "PORT" not in spec.env:
            port = self.container_port(spec)
        return f"http://{target.host}:{port}"

    def model_id(self, recipe: Recipe, spec: DockerLaunch) -> str | None:
        served = super().model_id(recipe, spec)
        if served or self.mounted_env(recipe, spec):
            # A knob pointed at the mount changes the name the engine serves; the smoke test takes
            # the one it lists.
            return served
        return spec.env.get("MODEL") or spec.env.get("MODEL_ID")

    def mapped_args(self, spec: DockerLaunch, target: Target) -> tuple[list[str], list[str]]:
        """The recipe's `docker run` options with author-side ones removed; and what was removed."""
        names = set(AUTHOR_SIDE)
        if not self.network_host(target):
            names.add("--network")
        return drop_docker_options(spec.args, names)

    def mounted(self, recipe: Recipe) -> dict[str, str]:
        """Pinned weights repositories → the container path they are mounted at."""
        return {
            repo: f"/models/{repo}"
            for artifact in recipe.artifacts
            if (repo := artifact_repo(artifact)) and artifact.pin
        }

    def weights(self, recipe: Recipe, target: Target) -> list[WeightsMount]:
        """Fetched weights, mounted read-only at /models/ORG/NAME."""
        pins = {artifact_repo(a): a.pin for a in recipe.artifacts if artifact_repo(a) and a.pin}
        return [
            WeightsMount(host=str(weights_dir(target.models_dir, repo, pins[repo])), target=inside)
            for repo, inside in self.mounted(recipe).items()
        ]

    def weights_mounts(self, recipe: Recipe, target: Target) -> list[str]:
        """The weights mounts as ``-v`` options, for the same bind rules as the recipe's own."""
        return [
            item for m in self.weights(recipe, target) for item in ("-v", f"{m.host}:{m.target}:ro")
        ]

    def mounted_env(self, recipe: Recipe, spec: DockerLaunch) -> dict[str, str]:
        """Env knobs whose value is a fetched repository, pointed at its mount instead."""
        mounted = self.mounted(recipe)
        return {key: mounted[value] for key, value in spec.env.items() if value in mounted}

    def fetch_steps(self, recipe: Recipe, spec: DockerLaunch, target: Target):
        pinned = "@sha256:" in spec.image
        details = [
            f"image {spec.image}",
            "pinned by digest"
            if pinned
            else "pinned by tag only: a tag can be moved; the digest pulled is recorded by docker",
            "`docker run` pulls the image only where it is not here yet (its --pull missing): a "
            "local image is used as it is, and a pull counts against the readiness timeout",
            f"a container {container_name(target)} that a killed launch of this name left "
            "(running, exited or Created) is removed first",
        ]
        return [
            step(
                StepKind.engine,
                "engine: the container image",
                details,
                [remove_command(target.name)],
            )
        ]

    def run_model(self, recipe: Recipe, spec: DockerLaunch, target: Target) -> DockerRun:
        """The typed model of this launch; its argv is the only docker argv rigbook runs."""
        fields, rest = split_model_options(self.mapped_args(spec, target)[0])
        env = {
            **fields.pop("env"),
            **spec.env,
            **self.mounted_env(recipe, spec),
            **self.host_knobs(spec, target),
        }
        # Name-only `-e KEY`: docker copies the value from rigbook's environment into the
        # container.
        extra = gpu_env_defaults() if target.gpus else {}
        publish = f"{target.host}:{target.port}:{self.container_port(spec)}"
        return DockerRun(
            image=spec.image,
            name=container_name(target),
            gpus=docker_gpus(target) if target.gpus else None,
            publish=None if self.network_host(target) else publish,
            weights=self.weights(recipe, target),
            env=env,
            copy_env=[key for key in extra if key not in spec.env],
            options=[
                *rest,
                *(i for k, v in labels(target.name).items() for i in ("--label", f"{k}={v}")),
            ],
            **fields,
        )

    def command(self, recipe: Recipe, spec: DockerLaunch, target: Target) -> LaunchCommand:
        argv = self.run_model(recipe, spec, target).argv()
        return LaunchCommand(argv=argv, env=gpu_env_defaults() if target.gpus else {})

    def dangers(self, recipe: Recipe, spec: DockerLaunch, target: Target) -> list[Danger]:
        # Checked after mapping (a replaced `--network host` is no longer asked for), with the
        # weights
        # mounts, which pass the same bind rules as the recipe's own.
        gpus = {str(g.index) for g in target.gpus} | {g.uuid for g in target.gpus if g.uuid}
        args = self.mapped_args(spec, target)[0] + self.weights_mounts(recipe, target)
        return env_dangers(spec.env, container=True) + docker_dangers(
            args, gpus=gpus, roots=[target.models_dir]
        )

    def stop_commands(self, spec: DockerLaunch, target: Target) -> list[LaunchCommand]:
        # `stop` lets the engine exit cleanly; `rm` takes what `--rm` does not: a container that
        # never started (Created) or one whose `docker run` client was killed.
        return [
            LaunchCommand(argv=["docker", "stop", "--time", "20", container_name(target)]),
            remove_command(target.name),
        ]

    def missing(self, spec: DockerLaunch) -> str | None:
        if not shutil.which("docker"):
            return "the docker client is not on PATH"
        # Before anything is started: a daemon that is down or refuses this user is its own code.
        check_daemon()
        return None

    def notes(self, recipe: Recipe, spec: DockerLaunch, target: Target) -> list[str]:
        _, dropped = self.mapped_args(spec, target)
        notes = [f"replaced author-side option: {d}" for d in dropped]
        notes += [
            f"{key}={spec.env[key]} → {key}={inside}: the fetched weights at the pinned revision, "
            "mounted read-only"
            for key, inside in self.mounted_env(recipe, spec).items()
        ]
        notes += [
            f"{key}={spec.env[key]} → {key}={value}: the host network publishes no port; the "
            "engine listens where rigbook picked"
            for key, value in self.host_knobs(spec, target).items()
        ]
        if not self.network_host(target):
            notes.append(
                f"host port {target.port} published on {target.host} → container port "
                f"{self.container_port(spec)}"
            )
        return notes
