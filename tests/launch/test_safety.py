import json
from pathlib import Path

import pytest

from rigbook.errors import LaunchError
from rigbook.launch.engines import engine_for
from rigbook.launch.plan import Target
from rigbook.launch.safety import docker_dangers, refuse_unless_allowed
from rigbook.recipe.schema import DockerLaunch
from tests.launch.helpers import RIG_2X, rigbook


def names(args):
    return [n for n, _ in docker_dangers(args)]


def test_privileged_and_root_bind_mount_are_refused_by_name():
    with pytest.raises(LaunchError) as caught:
        refuse_unless_allowed(docker_dangers(["--privileged", "-v", "/:/host"]), set())
    err = caught.value
    assert err.code == "E_UNSAFE"
    assert "privileged" in err.message and "bind-mount" in err.message
    assert any("/:/host" in d for d in err.details)


def test_allowing_one_option_by_name_still_refuses_the_other():
    dangers = docker_dangers(["--privileged", "-v", "/:/host"])
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
        (["-v", "/etc:/etc:ro"], "bind-mount"),
        (["-v", "/var/run/docker.sock:/var/run/docker.sock"], "bind-mount"),
        (["--mount", "type=bind,source=/usr,target=/x"], "bind-mount"),
        (["-v", "~:/home/me"], "bind-mount"),
        (["-v", "/home:/h"], "bind-mount"),
        (["-v", "/data/../etc:/x"], "bind-mount"),
    ],
)
def test_each_dangerous_option_is_named(args, name):
    assert name in names(args)


def test_what_a_gpu_container_needs_passes():
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
            ]
        )
        == []
    )


def test_hidden_folders_of_home_are_refused():
    assert names(["-v", "~/.ssh:/keys:ro"]) == ["bind-mount"]


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["-v=/:/host"], "bind-mount"),
        (["--volume=/etc:/x"], "bind-mount"),
        (["-itv", "/etc:/e"], "bind-mount"),
        (["-itv/etc:/e"], "bind-mount"),
        (["--mount", "type=bind,src=/,dst=/host"], "bind-mount"),
        (["--volumes-from", "other"], "volumes-from"),
        (["--volumes-from=other:ro"], "volumes-from"),
        (
            ["-v", "//var/run/docker.sock:/var/run/docker.sock"],
            "bind-mount",
        ),  # Linux reads //var as /var
        (
            [
                "--mount",
                "type=volume,dst=/h,volume-opt=type=none,volume-opt=o=bind,volume-opt=device=/",
            ],
            "bind-mount",
        ),
        (
            ["--mount", '"type=bind","source=/",target=/h'],
            "bind-mount",
        ),  # CSV quoting, as docker reads it
        (["--mount", "type=BIND,source=/etc,target=/h"], "bind-mount"),
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
    assert "bind-mount" in [n for n, _ in docker_dangers(["-v", ".:/h"], cwd=str(home))]
    assert "bind-mount" in [
        n for n, _ in docker_dangers(["-v", "..:/up"], cwd=str(home / "models"))
    ]
    assert "bind-mount" in [
        n
        for n, _ in docker_dangers(
            ["--mount", "type=bind,source=./..,target=/x"], cwd=str(home / "m")
        )
    ]
    # A folder of your own stays fine when named relatively.
    assert docker_dangers(["-v", "./weights:/w:ro"], cwd=str(home / "models")) == []


def test_a_value_is_what_docker_reads_it_as():
    # `--label --privileged` labels the container; docker does not read a second option there.
    assert names(["--label", "--privileged"]) == []
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
    assert any("--volumes-from=x" in m for m in refused)


def test_grouped_author_side_flags_are_replaced_too():
    # `-dp 8000:8000` would detach and publish on every interface; both are rigbook's to set.
    spec = DockerLaunch(image="img:1", args=["-dp", "8000:8000", "-itv", "cache:/c"])
    args, dropped = engine_for("docker").mapped_args(
        spec, Target(name="t", port=18000, models_dir=Path("/m"), work_dir=Path("/w"))
    )
    assert args == ["-v", "cache:/c"]
    assert dropped == ["-d", "-p 8000:8000", "-i", "-t"]
