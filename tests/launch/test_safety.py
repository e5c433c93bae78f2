import pytest

from rigbook.errors import LaunchError
from rigbook.launch.safety import docker_dangers, refuse_unless_allowed


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


@pytest.mark.parametrize(("args", "name"), [
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
])
def test_each_dangerous_option_is_named(args, name):
    assert name in names(args)


def test_what_a_gpu_container_needs_passes():
    assert names(["--init", "--ipc", "host", "--device", "/dev/nvidia0", "-v", "hf-cache:/root/.cache/huggingface",
                  "-v", "~/models/glm:/models:ro", "--shm-size", "16g"]) == []


def test_hidden_folders_of_home_are_refused():
    assert names(["-v", "~/.ssh:/keys:ro"]) == ["bind-mount"]
