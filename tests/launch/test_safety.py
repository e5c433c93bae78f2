import json
from pathlib import Path

import pytest

from rigbook.errors import LaunchError
from rigbook.launch.docker_args import DockerRun, NamedVolume, named_volume, split_model_options
from rigbook.launch.engines import engine_for
from rigbook.launch.plan import Target
from rigbook.launch.safety import docker_dangers, refuse_unless_allowed
from rigbook.recipe.schema import DockerLaunch
from tests.launch.helpers import RIG_2X, rigbook


def names(args, **kwargs):
    """The --allow name of each danger; "never" where none lets it through."""
    return [n or "never" for n, _ in docker_dangers(args, **kwargs)]


def test_privileged_and_root_bind_mount_are_refused_by_name():
    with pytest.raises(LaunchError) as caught:
        refuse_unless_allowed(docker_dangers(["--privileged", "-v", "/:/host"]), set())
    err = caught.value
    assert err.code == "E_UNSAFE"
    assert "privileged" in err.message and "never-allowed" in err.message
    assert any("/:/host" in d and "never allowed" in d for d in err.details)


def test_allowing_one_option_by_name_still_refuses_the_other():
    dangers = docker_dangers(["--privileged", "-v", "/srv/models:/m"])
    with pytest.raises(LaunchError) as caught:
        refuse_unless_allowed(dangers, {"privileged"})
    assert "bind-mount" in caught.value.message and "privileged" not in caught.value.message
    refuse_unless_allowed(dangers, {"privileged", "bind-mount"})


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["--pid", "host"], "pid-host"),
        (["--pid=host"], "pid-host"),
        (["--network=host"], "network-host"),
        (["--userns", "host"], "userns-host"),
        (["--cap-add", "SYS_ADMIN"], "cap-add"),
        (["--device", "/dev/sda"], "device"),
        (["--security-opt", "seccomp=unconfined"], "security-opt"),
        (["-v", "/etc:/etc:ro"], "never"),
        (["-v", "/var/run/docker.sock:/var/run/docker.sock"], "never"),
        (["--mount", "type=bind,source=/usr,target=/x"], "never"),
        (["-v", "~:/home/me"], "never"),
        (["-v", "/home:/h"], "never"),
        (["-v", "/data/../etc:/x"], "never"),
        (["-v", "/data:/x"], "bind-mount"),
        (["-v", "~/bin:/hostbin"], "never"),
        (["-v", "/tmp/tmux-1000:/t"], "never"),
        (["-v", "/tmp/.X11-unix:/x"], "never"),
        (["-v", "/opt/conda:/c"], "bind-mount"),
        (["--mount", "type=bind,source=/srv/models,src=/,target=/host"], "never"),
        (["--cidfile", "/tmp/c"], "never"),
        (["--runtime", "nvidia"], "never"),
        (["--annotation", "cdi.k8s.io/x=nvidia.com/gpu=all"], "never"),
        (["--brand-new-option"], "option:--brand-new-option"),
    ],
)
def test_each_dangerous_option_is_named(args, name):
    assert name in names(args)


def test_what_a_gpu_container_needs_passes():
    models = Path.home() / "models"
    assert (
        names(
            [
                "--init",
                "--ipc",
                "host",
                "--device",
                "/dev/nvidia0",
                "-v",
                "hf-cache:/root/.cache/huggingface",
                "-v",
                "~/models/glm:/models:ro",
                "--shm-size",
                "16g",
            ],
            roots=[models],
        )
        == []
    )


def test_folders_of_home_are_never_mounted():
    assert names(["-v", "~/.ssh:/keys:ro"]) == ["never"]
    assert names(["-v", "~/code:/c"]) == ["never"]


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["-v=/:/host"], "never"),
        (["--volume=/etc:/x"], "never"),
        (["-itv", "/etc:/e"], "never"),
        (["-itv/etc:/e"], "never"),
        (["--mount", "type=bind,src=/,dst=/host"], "never"),
        (["--volumes-from", "other"], "volumes-from"),
        (["--volumes-from=other:ro"], "volumes-from"),
        (
            ["-v", "//var/run/docker.sock:/var/run/docker.sock"],
            "never",
        ),  # Linux reads //var as /var
        (
            [
                "--mount",
                "type=volume,dst=/h,volume-opt=type=none,volume-opt=o=bind,volume-opt=device=/",
            ],
            "never",
        ),
        (
            ["--mount", '"type=bind","source=/",target=/h'],
            "never",
        ),  # CSV quoting, as docker reads it
        (["--mount", "type=BIND,source=/etc,target=/h"], "never"),
        (["--device", "/dev/nvidia-caps/../sda"], "device"),
        (["--env-file", "/home/u/.aws/credentials"], "env-file"),
        (["--env-file=.env"], "env-file"),
        (["--device-cgroup-rule", "c 1:3 mr"], "device-cgroup-rule"),
        (["--security-opt", "label=disable"], "security-opt"),
        (["--security-opt=label:disable"], "security-opt"),
        (["--security-opt", "apparmor=unconfined"], "security-opt"),
        (["--security-opt", "seccomp:unconfined"], "security-opt"),
        (["--net=host"], "network-host"),
        (["-dit", "--privileged"], "privileged"),
        (["--use-api-socket"], "use-api-socket"),
    ],
)
def test_options_written_the_ways_docker_reads_them_are_named(args, name):
    assert name in names(args)


def test_relative_bind_sources_are_checked_where_docker_runs():
    home = Path.home()
    assert names(["-v", ".:/h"], cwd=str(home)) == ["never"]
    assert names(["-v", "./bin:/hostbin"], cwd=str(home)) == ["never"]
    assert names(["-v", "..:/up"], cwd=str(home / "models")) == ["never"]
    assert names(["-v", "./x:/x"], cwd="/srv") == ["bind-mount"]
    # The models folder stays rigbook's own when named relatively.
    assert names(["-v", "./weights:/w:ro"], cwd=str(home / "models"), roots=[home / "models"]) == []


def test_a_value_is_what_docker_reads_it_as():
    # `--cpuset-cpus --privileged` is a value; docker does not read a second option there.
    assert names(["--cpuset-cpus", "--privileged"]) == []
    assert "--privileged" not in " ".join(
        d.what for d in docker_dangers(["--cpuset-cpus", "--privileged"])
    )
    assert names(["--cpuset-cpus", "0-3", "--shm-size", "16g", "--ulimit", "memlock=-1"]) == []
    # A bare `-v /data` is an anonymous volume inside the container, not a host path.
    assert names(["-v", "/data"]) == []


def test_a_newly_named_option_can_be_allowed_by_name():
    dangers = docker_dangers(["--device-cgroup-rule", "c 1:3 mr", "--volumes-from", "cache"])
    with pytest.raises(LaunchError) as caught:
        refuse_unless_allowed(dangers, {"volumes-from"})
    assert (
        "--allow device-cgroup-rule" in caught.value.remedy
        and "volumes-from" not in caught.value.message
    )
    refuse_unless_allowed(dangers, {"volumes-from", "device-cgroup-rule"})


def _unsafe_findings(recipe: dict, tmp_path: Path) -> list[str]:
    path = tmp_path / f"{recipe['slug']}.json"
    path.write_text(json.dumps(recipe))
    done = rigbook("plan", str(path), "--rig", str(RIG_2X), "--json")
    assert done.returncode == 2, done.stdout + done.stderr
    plan = json.loads(done.stdout)
    if "error" in plan:  # a danger no --allow lets through stops the plan itself
        assert plan["error"]["code"] == "E_UNSAFE"
        return plan["error"]["details"]
    return [f["message"] for s in plan["steps"] for f in s["findings"] if f["code"] == "E_UNSAFE"]


def test_a_docker_kind_recipe_cannot_hide_a_mount_in_docker_syntax(tmp_path):
    recipe = {
        "slug": "evil-kind",
        "title": "t",
        "config": {"launch": []},
        "hardware": [],
        "rigbook": {
            "launch": {
                "kind": "docker",
                "image": "img:1",
                "args": ["-v=/:/host", "-itv", "/etc:/e"],
            }
        },
    }
    refused = _unsafe_findings(recipe, tmp_path)
    assert any("-v=/:/host" in m for m in refused) and any("-v /etc:/e" in m for m in refused)


def test_a_config_launch_docker_run_cannot_hide_a_mount_in_docker_syntax(tmp_path):
    recipe = {
        "slug": "evil-argv",
        "title": "t",
        "hardware": [],
        "config": {
            "launch": [
                "docker",
                "run",
                "-v=/:/host",
                "-itv",
                "/etc:/e",
                "--volumes-from=x",
                "img:1",
            ]
        },
    }
    refused = _unsafe_findings(recipe, tmp_path)
    assert any("-v=/:/host" in m for m in refused) and any("-v /etc:/e" in m for m in refused)
    # One --allow can let through is a finding of the plan's start step.
    recipe["config"]["launch"] = ["docker", "run", "-itv", "cache:/c", "--volumes-from=x", "img:1"]
    assert any("--volumes-from=x" in m for m in _unsafe_findings(recipe, tmp_path))


def test_grouped_author_side_flags_are_replaced_too():
    # `-dp 8000:8000` would detach and publish on every interface; both are rigbook's to set.
    spec = DockerLaunch(image="img:1", args=["-dp", "8000:8000", "-itv", "cache:/c"])
    args, dropped = engine_for("docker").mapped_args(
        spec, Target(name="t", port=18000, models_dir=Path("/m"), work_dir=Path("/w"))
    )
    assert args == ["-v", "cache:/c"]
    assert dropped == ["-d", "-p 8000:8000", "-i", "-t"]


def test_docker_argv_is_built_from_the_typed_model():
    fields, rest = split_model_options(
        ["--init", "--ipc=host", "-v", "cache:/c:ro", "-e", "A=1", "--shm-size", "16g", "-v", "/x"]
    )
    assert rest == ["--shm-size", "16g", "-v", "/x"]
    run = DockerRun(image="img:1", name="rigbook-t", gpus='"device=0"', options=rest, **fields)
    assert run.volumes == [NamedVolume(name="cache", target="/c", read_only=True)]
    assert run.argv() == [
        *("docker", "run", "--rm", "--name", "rigbook-t", "--gpus", '"device=0"'),
        *("--init", "--ipc", "host", "--shm-size", "16g", "-v", "/x"),
        *("-v", "cache:/c:ro", "-e", "A=1", "img:1"),
    ]
    # Only a name docker reads as a volume name is one: a path or `..` is not.
    assert named_volume("../x:/c") is None and named_volume("/etc:/e") is None
    assert named_volume("cache:/c:z") is None


def test_the_seed_docker_recipe_runs_as_its_model(tmp_path):
    done = rigbook(
        "up",
        "tests/fixtures/recipes/glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3.json",
        "--dry-run",
        "--rig",
        str(RIG_2X),
        "--models-dir",
        str(tmp_path),
        "--json",
    )
    argv = json.loads(done.stdout)["command"]["argv"]
    assert argv[:2] == ["docker", "run"] and argv[-1].startswith("ghcr.io/")
    assert "--network" not in argv and "--init" in argv
    assert argv[argv.index("--ipc") + 1] == "host"
    mounts = [argv[i + 1] for i, a in enumerate(argv) if a == "-v"]
    assert "glm53-qad-2x6000-runtime-cache:/cache" in mounts
    assert any(m.startswith(str(tmp_path)) and m.endswith(":ro") for m in mounts)
