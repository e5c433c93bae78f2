"""The real llama-server, given what an option filter could miss, inside the sandbox: a log file
aimed at the user's home and at a `.pth` in a site-packages, and `/proc/self/environ` as its chat
template. The attack is added to the planned command after every rule ran (the filter off)."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

from rigbook.launch.engines.llama_cpp import package_dir
from rigbook.launch.plan import Plan
from rigbook.launch.planner import build_plan
from rigbook.launch.supervisor import start, stop_group, wait_ready
from rigbook.recipe import EMBEDDED_SLUG
from rigbook.recipe.resolve import resolve_recipe
from tests.conftest import free_port

SECRET = "hf_" + uuid.uuid4().hex
KEYS = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM6 owner@laptop\n"


@pytest.fixture
def fake_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "user"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text(KEYS)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setenv("RIGBOOK_TEST_SECRET", SECRET)
    return home


def _serve_with(attack: list[str], allow: list[str], log: Path) -> str:
    """Start the embedded recipe's llama-server with ``attack`` appended to its planned argv; its
    `GET /props` body."""
    plan: Plan = build_plan(
        resolve_recipe(EMBEDDED_SLUG), port=free_port(), name="contained", allow=allow
    )
    assert plan.command is not None
    command = plan.command.model_copy(update={"argv": [*plan.command.argv, *attack]})
    proc = start(command, log)
    try:
        wait_ready(proc, plan.url, log, 180, ready_paths=("/health",))
        return httpx.get(f"{plan.url}/props", timeout=30).text
    finally:
        stop_group(proc.pid, child=proc, grace_s=5)


@pytest.mark.e2e
def test_log_file_into_the_home_and_the_environ_template_stay_contained(tmp_path, fake_home):
    keys = fake_home / ".ssh" / "authorized_keys"
    props = _serve_with(
        ["--log-file", str(keys), "--chat-template-file", "/proc/self/environ"],
        [],
        tmp_path / "engine.log",
    )
    assert keys.read_text() == KEYS
    # The template is the engine's own environment, which holds nothing of the user's.
    assert "XDG_CACHE_HOME" in props
    assert SECRET not in props and "RIGBOOK_TEST_SECRET" not in props


@pytest.mark.e2e
def test_log_file_into_site_packages_plants_no_pth(tmp_path, fake_home):
    site = package_dir("llama_cpp")
    assert site is not None
    pth = site.parent / f"rigbook-sandbox-{uuid.uuid4().hex}.pth"
    try:
        _serve_with(["--log-file", str(pth)], [], tmp_path / "engine.log")
        assert not pth.exists()
    finally:
        pth.unlink(missing_ok=True)


@pytest.mark.e2e
def test_without_the_sandbox_the_same_attack_lands(tmp_path, fake_home):
    # The control: the attack works on an unconfined llama-server, so the tests above can fail.
    keys = fake_home / ".ssh" / "authorized_keys"
    props = _serve_with(
        ["--log-file", str(keys), "--chat-template-file", "/proc/self/environ"],
        ["no-sandbox"],
        tmp_path / "engine.log",
    )
    assert keys.read_text() != KEYS
    assert SECRET in props
