"""Both judges on the same docker recipes: the hand parser never passes what docker shows unsafe.

Every docker case of the unsafe corpus, and argv drawn by a fuzzer, goes through the hand parser
as `plan` runs it; where the hand parser lets it through (nothing refused, or only what the
user then allows by name), the same launch is created by docker (a stub image tagged for it),
inspected and removed, and docker must see nothing beyond what was allowed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from rigbook.errors import RigbookError
from rigbook.launch.docker_inspect import judge_run
from rigbook.launch.engines import engine_for
from rigbook.launch.plan import GpuRef, Target
from rigbook.launch.safety import refused
from rigbook.launch.screen import target_dangers
from rigbook.launch.spec import launch_spec
from rigbook.recipe import load_recipe_file
from rigbook.recipe.schema import DockerLaunch, Recipe
from tests.conftest import free_port
from tests.security.conftest import CORPUS, corpus_names, corpus_recipe
from tests.security.test_docker_judge import judge_containers, stub_image

pytestmark = pytest.mark.usefixtures("docker_daemon")

# Each case that names docker (its kind, or a `docker run` argv); the test keeps the docker kind.
DOCKER_CASES = [n for n in corpus_names() if "docker" in (CORPUS / n).read_text()]


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    with stub_image() as name:
        yield name


def _target(models: Path, allow: set[str]) -> Target:
    return Target(
        name="differential",
        gpus=[GpuRef(index=0), GpuRef(index=1)],
        port=free_port(),
        models_dir=models,
        work_dir=models.parent / "repos",
        allow=sorted(allow),
    )


def differ(recipe: Recipe, spec: DockerLaunch, models: Path) -> tuple[str, list]:
    """Where the hand parser lets ``spec`` through (allowing what it names), what docker shows
    beyond those allows: ``("hand refuses", [])``, ``("docker cannot judge", [])`` or
    ``("judged", dangers)``."""
    first = target_dangers(recipe, _target(models, set()), spec)
    allowed = {d.allow for d in first if d.allow}
    target = _target(models, allowed)
    if refused(target_dangers(recipe, target, spec), allowed):
        return "hand refuses", []
    run = engine_for("docker").run_model(recipe, spec, target)  # type: ignore[attr-defined]
    gpus = {str(g.index) for g in target.gpus}
    verdict = judge_run(run, gpus=gpus, roots=[target.models_dir])
    if verdict.judge == "hand":
        return "docker cannot judge", []
    return "judged", refused(verdict.dangers, allowed)


def test_the_corpus_has_docker_cases():
    assert len(DOCKER_CASES) >= 60


def test_no_corpus_case_passes_the_hand_parser_that_docker_shows_unsafe(image, sandbox):
    outcomes: dict[str, list[str]] = {}
    gaps = []
    for name in DOCKER_CASES:
        path, _ = corpus_recipe(name, sandbox)
        try:
            recipe = load_recipe_file(str(path))
            spec = launch_spec(recipe)
        except RigbookError:  # refused as input (E_RECIPE_INVALID, E_UNSAFE): never reaches docker
            outcomes.setdefault("refused as input", []).append(name)
            continue
        if spec.kind != "docker":
            continue
        spec = spec.model_copy(update={"image": image})
        outcome, unsafe = differ(recipe, spec, sandbox / "models")
        outcomes.setdefault(outcome, []).append(name)
        if unsafe:
            gaps.append((name, unsafe))
    assert gaps == []
    # Cases whose only refusals can be allowed by name reach docker.
    assert len(outcomes.get("judged", [])) >= 10, outcomes
    assert judge_containers() == []


# What the fuzzer draws from: options in each spelling docker reads (long, alias, short,
# grouped, `=`), values that look like options, and what an attacker gives.
FLAGS = [
    "--privileged",
    "--privileged=true",
    "--privileged=false",
    "--privileged=1",
    "--privileged=F",
    "--init",
    "--init=false",
    "--rm",
    "--read-only",
    "-d",
    "-it",
    "-dit",
    "-P",
    "-q",
    "--no-healthcheck",
    "--sig-proxy=false",
    "--use-api-socket",
    "--use-api-socket=false",
    "--",
    "-",
    "-privileged",
    "---privileged",
    "--help",
    "--unknown-flag",
    "-ePRIV=1",
    "-v/etc:/x",
    "-e=LD_PRELOAD=/x.so",
    "--gpus=all",
    "--device=/dev/nvidia0",
    "--ipc=host",
    "--net=host",
]
VALUED = [
    "-e",
    "--env",
    "-v",
    "--volume",
    "-de",
    "-dv",
    "-tv",
    "--ipc",
    "--pid",
    "--uts",
    "--userns",
    "--cgroupns",
    "--network",
    "--net",
    "--cap-add",
    "--cap-drop",
    "--gpus",
    "--device",
    "--security-opt",
    "--cgroup-parent",
    "--sysctl",
    "--runtime",
    "--shm-size",
    "--memory",
    "-m",
    "--cpus",
    "--ulimit",
    "--stop-signal",
    "--pull",
    "--oom-score-adj",
    "--pids-limit",
    "--label",
    "--entrypoint",
    "--mount",
    "--tmpfs",
    "--volumes-from",
    "--cidfile",
    "--env-file",
    "--publish",
    "-p",
    "--name",
    "--hostname",
    "-u",
]
VALUES = [
    "host",
    "private",
    "container:other",
    "SYS_ADMIN",
    "ALL",
    "all",
    "/dev/null",
    "/dev/nvidia0",
    "/dev/nvidia7",
    "seccomp=unconfined",
    "no-new-privileges",
    "/",
    "net.ipv4.ip_forward=1",
    "runc",
    "1g",
    "2",
    "-1",
    "nofile=1024:1024",
    "SIGTERM",
    "never",
    "name:/cache",
    "data:/data:ro",
    "/etc:/x",
    "/srv:/srv",
    "FOO=1",
    "LD_PRELOAD=/x.so",
    "X",
    "type=bind,src=/etc,dst=/x",
    "/run",
    "8000:8000",
    "--privileged",
    "--pid=host",
    "-v/etc:/y",
    "--cap-add=ALL",
]


@st.composite
def docker_argv(draw) -> list[str]:
    items: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        how = draw(st.integers(min_value=0, max_value=3))
        if how == 0:
            items.append(draw(st.sampled_from(FLAGS)))
        elif how == 1:
            items += [draw(st.sampled_from(VALUED)), draw(st.sampled_from(VALUES))]
        elif how == 2:
            name = draw(st.sampled_from([v for v in VALUED if v.startswith("--")]))
            items.append(f"{name}={draw(st.sampled_from(VALUES))}")
        else:
            letters = draw(st.text(alphabet="dtieqvPpmuh", min_size=1, max_size=3))
            items += [f"-{letters}", draw(st.sampled_from(VALUES))]
    # A valued option last, with no value: docker then reads rigbook's own next item as its value.
    return items + draw(st.lists(st.sampled_from(VALUED), max_size=1))


@pytest.fixture(scope="module")
def fuzz_recipe(tmp_path_factory) -> tuple[Recipe, Path]:
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "models").mkdir()
    path = folder / "fuzz.json"
    path.write_text(
        json.dumps(
            {
                "slug": "fuzz",
                "title": "fuzz",
                "config": {"launch": []},
                "hardware": [],
                "rigbook": {"launch": {"kind": "docker", "image": "example/engine:1"}},
            }
        )
    )
    return load_recipe_file(str(path)), folder / "models"


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(argv=docker_argv())
def test_no_fuzzed_argv_passes_the_hand_parser_that_docker_shows_unsafe(image, fuzz_recipe, argv):
    recipe, models = fuzz_recipe
    try:
        spec = DockerLaunch(image=image, args=argv)
    except ValidationError:
        return
    outcome, unsafe = differ(recipe, spec, models)
    assert unsafe == [], (argv, outcome)


# Options the hand parser passes, or lets through by their allow name, each with a value docker
# accepts: argv built from these mostly reaches docker, so the two readings are compared on it.
PASSING = [
    ("--init", None),
    ("--read-only", None),
    ("--no-healthcheck", None),
    ("--privileged", None),
    ("--use-api-socket", None),
    ("--shm-size", "1g"),
    ("--memory", "2g"),
    ("--cpus", "2"),
    ("--ulimit", "nofile=1024:1024"),
    ("--stop-signal", "SIGTERM"),
    ("--cap-drop", "ALL"),
    ("--pids-limit", "-1"),
    ("--ipc", "host"),
    ("--env", "FOO=1"),
    ("--volume", "data:/data:ro"),
    ("--volume", "/srv/rigbook-judge:/x"),
    ("--cap-add", "SYS_ADMIN"),
    ("--pid", "host"),
    ("--uts", "host"),
    ("--userns", "host"),
    ("--network", "host"),
    ("--security-opt", "seccomp=unconfined"),
    ("--device", "/dev/null"),
    ("--cgroup-parent", "rigbook-judge"),
    ("--device-cgroup-rule", "c 1:3 rwm"),
]
SHORT_OF = {"--memory": "m", "--env": "e", "--volume": "v"}


@st.composite
def passing_argv(draw) -> list[str]:
    items: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        name, value = draw(st.sampled_from(PASSING))
        how = draw(st.integers(min_value=0, max_value=3))
        short = SHORT_OF.get(name)
        if value is None:
            items.append(name)
        elif how == 0:
            items += [name, value]
        elif how == 1:
            items.append(f"{name}={value}")
        elif short and how == 2:
            # Booleans first in a group, the valued letter last: `-dim 2g`, `-dm2g`.
            items += [f"-{draw(st.sampled_from(['', 'd', 'di', 'q']))}{short}", value]
        elif short:
            items.append(f"-{short}{value}")
        else:
            items += [name, value]
    return items


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(argv=passing_argv())
def test_no_passing_argv_differs_between_the_judges(image, fuzz_recipe, argv):
    recipe, models = fuzz_recipe
    outcome, unsafe = differ(recipe, DockerLaunch(image=image, args=argv), models)
    assert unsafe == [], (argv, outcome)
