"""Docker judges a docker recipe's flags: `docker create --pull never` + `docker inspect`, then gone.

Each test uses a real daemon (the ``docker_daemon`` fixture) and a stub image made by ``docker
import`` of an empty tarball (``create`` runs nothing, so an empty root is enough). Only the tests
tag a stub with a recipe's image name; rigbook never does.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rigbook.launch.docker_args import DockerRun, NamedVolume
from rigbook.launch.docker_inspect import judge_run

pytestmark = pytest.mark.usefixtures("docker_daemon")

BRANCH = "rigbook-docker-judge"


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=120, check=check
    )


@contextmanager
def stub_image(*tags: str) -> Iterator[str]:
    """An empty image with a command, tagged with each of ``tags`` (else a fresh name); removed
    after."""
    empty = io.BytesIO()
    tarfile.open(fileobj=empty, mode="w").close()
    name = f"{BRANCH}/stub:{uuid.uuid4().hex[:12]}"
    subprocess.run(
        ["docker", "import", "--change", 'CMD ["/serve"]', "-", name],
        input=empty.getvalue(),
        capture_output=True,
        timeout=120,
        check=True,
    )
    for tag in tags:
        docker("tag", name, tag)
    try:
        yield tags[0] if tags else name
    finally:
        docker("rmi", *tags, name, check=False)


def judge_containers() -> list[str]:
    return docker(
        "ps", "-a", "--filter", "name=rigbook-judge-", "--format", "{{.Names}}"
    ).stdout.split()


def volumes() -> set[str]:
    return set(docker("volume", "ls", "-q").stdout.split())


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    with stub_image() as name:
        yield name


def judged(image: str, options: list[str], tmp_path: Path, *, gpus: set[str] | None = None):
    run = DockerRun(image=image, name="x", options=options)
    return judge_run(run, gpus=gpus or set(), roots=[tmp_path / "models"])


def test_a_plain_container_is_judged_by_docker_and_safe(image, tmp_path):
    verdict = judged(image, ["--init", "--ipc", "host", "--memory", "1g"], tmp_path)
    assert verdict.judge == "docker" and verdict.dangers == []
    assert judge_containers() == []


@pytest.mark.parametrize(
    ("options", "allow", "says"),
    [
        (["--privileged"], "privileged", "privileged"),
        (["--cap-add", "SYS_ADMIN"], "cap-add", "SYS_ADMIN"),
        (["-v", "/srv:/srv"], None, "/srv"),
        (["-v", "/etc:/host-etc:ro"], None, "/etc"),
        (["--device", "/dev/null:/dev/x"], "device", "/dev/null"),
        (["--gpus", "all"], "device", "beyond this launch's GPUs"),
        (["--gpus", '"device=0,2"'], "device", "beyond this launch's GPUs"),
        (["--device-cgroup-rule", "c 1:3 rwm"], "device-cgroup-rule", "c 1:3"),
        (["--pid", "host"], "pid-host", "pid"),
        (["--uts", "host"], "uts-host", "uts"),
        (["--userns", "host"], "userns-host", "user"),
        (["--network", "host"], "network-host", "network"),
        (["--security-opt", "seccomp=unconfined"], "security-opt", "seccomp=unconfined"),
        (["--cgroup-parent", "/"], "cgroup-parent", "/"),
        (["--sysctl", "net.ipv4.ip_forward=1"], None, "ip_forward"),
        (["--runtime", "io.containerd.runc.v2"], None, "runtime"),
        (["--entrypoint", "/bin/sh"], None, "Entrypoint"),
        (["-e", "LD_PRELOAD=/x.so"], None, "LD_PRELOAD"),
        (["-P"], None, "every exposed port"),
        (["--log-driver", "none"], None, "log driver"),
        # The client mounts the API socket itself: the same allow name as the hand parser's
        # (the differential fuzzer found it charged as a bind of /run).
        (["--use-api-socket"], "use-api-socket", "API socket"),
        (["-v", "/var/run/docker.sock:/var/run/docker.sock"], None, "/run"),
    ],
)
def test_docker_sees_each_dangerous_option(image, tmp_path, options, allow, says):
    verdict = judged(image, options, tmp_path, gpus={"0", "1"})
    assert verdict.judge == "docker", verdict.reason
    assert [d.allow for d in verdict.dangers] == [allow], verdict.dangers
    assert says in verdict.dangers[0].what
    assert judge_containers() == []


def test_the_launch_gpus_and_the_models_folder_pass(image, tmp_path):
    weights = tmp_path / "models" / "org" / "m"
    weights.mkdir(parents=True)
    verdict = judged(
        image, ["--gpus", '"device=1"', "-v", f"{weights}:/models/org/m:ro"], tmp_path, gpus={"1"}
    )
    assert verdict.judge == "docker" and verdict.dangers == []


def test_a_symlink_to_etc_inside_the_models_folder_is_a_bind_of_etc(image, tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "link").symlink_to("/etc")
    verdict = judged(image, ["-v", f"{tmp_path}/models/link:/x"], tmp_path)
    assert [d.allow for d in verdict.dangers] == [None]
    assert "/etc" in verdict.dangers[0].what


def test_a_volume_create_made_is_removed_and_one_that_existed_is_kept(image, tmp_path):
    kept = f"{BRANCH}-kept-{uuid.uuid4().hex[:8]}"
    made = f"{BRANCH}-made-{uuid.uuid4().hex[:8]}"
    docker("volume", "create", kept)
    try:
        run = DockerRun(
            image=image,
            name="x",
            volumes=[NamedVolume(name=kept, target="/a"), NamedVolume(name=made, target="/b")],
        )
        verdict = judge_run(run, gpus=set(), roots=[])
        assert verdict.judge == "docker" and verdict.dangers == []
        assert kept in volumes() and made not in volumes()
        assert judge_containers() == []
    finally:
        docker("volume", "rm", kept, made, check=False)


def test_a_volume_that_binds_a_host_folder_is_refused_and_removed(image, tmp_path):
    made = f"{BRANCH}-bind-{uuid.uuid4().hex[:8]}"
    mount = (
        f"type=volume,src={made},dst=/d,volume-driver=local,"
        "volume-opt=type=none,volume-opt=o=bind,volume-opt=device=/etc"
    )
    verdict = judged(image, ["--mount", mount], tmp_path)
    assert verdict.judge == "docker"
    assert [d.allow for d in verdict.dangers] == [None] and "/etc" in verdict.dangers[0].what
    assert made not in volumes() and judge_containers() == []


def test_the_client_side_options_never_reach_this_machine(image, tmp_path):
    cid = tmp_path / "cid"
    verdict = judged(image, ["--cidfile", str(cid)], tmp_path)
    assert verdict.judge == "docker" and not cid.exists()


def test_an_image_not_present_locally_leaves_the_verdict_to_the_hand_parser(tmp_path):
    verdict = judged(f"{BRANCH}/absent:{uuid.uuid4().hex[:8]}", [], tmp_path)
    assert verdict.judge == "hand" and "image not present locally" in verdict.reason


def test_what_docker_will_not_create_leaves_the_verdict_to_the_hand_parser(image, tmp_path):
    verdict = judged(image, ["--runtime", "nvidia-absent"], tmp_path)
    assert verdict.judge == "hand" and "would not create it" in verdict.reason
    assert judge_containers() == []


def test_no_daemon_leaves_the_verdict_to_the_hand_parser(image, tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no.sock")
    verdict = judged(image, [], tmp_path)
    assert verdict.judge == "hand" and "no docker daemon answers" in verdict.reason


def test_no_docker_client_leaves_the_verdict_to_the_hand_parser(image, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    verdict = judged(image, [], tmp_path)
    assert verdict.judge == "hand" and "not installed" in verdict.reason


def test_an_interrupt_right_after_create_leaves_no_container(image, tmp_path, monkeypatch):
    import rigbook.launch.docker_inspect as judge

    real = judge._json

    def interrupted(*args: str):
        if args[:2] == ("container", "inspect"):
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(judge, "_json", interrupted)
    with pytest.raises(KeyboardInterrupt):
        judge.created(["--init"], image)
    assert judge_containers() == []


def test_plan_refuses_a_named_volume_that_docker_shows_binds_etc(image, tmp_path, monkeypatch):
    """The hand parser sees a named volume; docker shows the volume binds /etc (a volume made
    with bind options, here by the test, is the user's and stays)."""
    from rigbook.errors import RigbookError
    from rigbook.launch.planner import build_plan
    from rigbook.recipe import load_recipe_file
    from tests.launch.helpers import write_recipe

    monkeypatch.setenv("RIGBOOK_HOME", str(tmp_path / "home"))
    name = f"{BRANCH}-etc-{uuid.uuid4().hex[:8]}"
    docker(
        "volume", "create", "--opt", "type=none", "--opt", "o=bind", "--opt", "device=/etc", name
    )
    try:
        launch = {"kind": "docker", "image": image, "args": ["-v", f"{name}:/x:ro"]}
        recipe = load_recipe_file(str(write_recipe(tmp_path, "etc-volume", launch)))
        with pytest.raises(RigbookError) as refused:
            build_plan(recipe, models_dir=tmp_path / "models")
        assert refused.value.code == "E_UNSAFE" and "/etc" in refused.value.message
        assert name in volumes() and judge_containers() == []
    finally:
        docker("volume", "rm", name, check=False)
