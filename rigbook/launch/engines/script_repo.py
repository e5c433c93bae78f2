"""A script repository (the guide's form): clone at a commit, apply patches, run its start
command with env.

The script itself is the recipe author's code and runs with your rights: the
plan shows exactly which repository, commit and command, and `up` asks first.
The GPUs are passed as CUDA_VISIBLE_DEVICES; the drafter as the env variable the
recipe names (``DRAFTER``); the script's own dry run (``DRY_RUN=1``) runs before
the real start.
"""

from __future__ import annotations

import os
import shutil
from typing import ClassVar

from rigbook.errors import InputError
from rigbook.launch.engines.base import Engine, step
from rigbook.launch.logscan import LogPattern
from rigbook.launch.placeholders import cuda_env, gpu_env_defaults
from rigbook.launch.plan import LaunchCommand, StepKind, Target
from rigbook.launch.rules import Danger
from rigbook.launch.rules.env import env_dangers
from rigbook.launch.rules.shell import shell_dangers
from rigbook.launch.sandbox import confine, engine_folder, sandboxed
from rigbook.recipe.schema import Recipe, ScriptRepoLaunch


class ScriptRepoEngine(Engine):
    kind = "script_repo"
    log_patterns: ClassVar[list[LogPattern]] = [
        LogPattern(
            code="E_P2P", pattern=r"\bE_P2P\b", why="the script reported a CUDA peer-access problem"
        ),
        LogPattern(
            code="E_GPU_MEMORY",
            pattern=r"\bE_GPU_MEMORY\b",
            why="the script reported too little free GPU memory",
        ),
    ]

    def checkout(self, recipe: Recipe, target: Target):
        return target.work_dir / recipe.slug

    def url(self, spec: ScriptRepoLaunch, target: Target) -> str:
        return f"http://{target.host}:{target.port}"

    def env(self, spec: ScriptRepoLaunch, target: Target) -> dict[str, str]:
        env = {**gpu_env_defaults(), **spec.env, **cuda_env(target)}
        if target.drafter:
            if not spec.drafter_env:
                raise InputError(
                    "E_INPUT",
                    "this recipe's script has no drafter choice (no drafter_env); drop --drafter",
                )
            env[spec.drafter_env] = target.drafter
        return env

    def fetch_steps(self, recipe: Recipe, spec: ScriptRepoLaunch, target: Target):
        folder = self.checkout(recipe, target)
        commands = []
        details = [f"repository {spec.git_url}", f"into {folder}"]
        # The clone's own .git, named outright: git never falls back to a repository the folder sits
        # in.
        git = ["git", "-C", str(folder), "--git-dir=.git", "--work-tree=."]
        if folder.exists():
            details.append(
                "already cloned: changes in the clone are discarded "
                "(`git reset --hard`, `git clean -fd`) "
                "before the checkout and the patches"
            )
            # `clean -fd` keeps ignored files (build outputs, caches the script made) and drops what
            # patches added.
            commands += [
                LaunchCommand(argv=[*git, "reset", "--hard", "--quiet"]),
                LaunchCommand(argv=[*git, "clean", "-fd", "--quiet"]),
            ]
        else:
            commands.append(LaunchCommand(argv=["git", "clone", "--", spec.git_url, str(folder)]))
        if spec.commit:
            details.append(f"pinned commit {spec.commit}")
            commands.append(LaunchCommand(argv=[*git, "checkout", "--detach", spec.commit]))
        else:
            details.append(
                "warning: no pinned commit in the recipe — the branch head is used and can change"
            )
        for patch in spec.patches:
            commands.append(LaunchCommand(argv=[*git, "apply", "--", patch]))
        if spec.patch_count and not spec.patches:
            details.append(
                f"{spec.patch_count} patches: applied by the script itself ({' '.join(spec.start)})"
            )
        if spec.dry_run_env:
            own = LaunchCommand(
                argv=spec.start, env={**spec.dry_run_env, **self.env(spec, target)}, cwd=str(folder)
            )
            # The dry run is the script's own code too: in the same sandbox as its start.
            own = confine(spec.kind, target, own) or own
            details.append(f"then the script's own dry run: {own.shown}")
            commands.append(own)
        return [step(StepKind.engine, "engine: the recipe's script repository", details, commands)]

    def command(self, recipe: Recipe, spec: ScriptRepoLaunch, target: Target) -> LaunchCommand:
        return LaunchCommand(
            argv=spec.start, env=self.env(spec, target), cwd=str(self.checkout(recipe, target))
        )

    def dangers(self, recipe: Recipe, spec: ScriptRepoLaunch, target: Target) -> list[Danger]:
        # The script's own knobs: its drafter variable and what its dry run sets.
        own = {*spec.dry_run_env, *([spec.drafter_env] if spec.drafter_env else [])}
        env = {**spec.dry_run_env, **spec.env}
        return env_dangers(env, kind=self.kind, own=own) + shell_dangers(spec.start)

    def notes(self, recipe: Recipe, spec: ScriptRepoLaunch, target: Target) -> list[str]:
        pinned = (
            f"at commit {spec.commit}"
            if spec.commit
            else "at whatever its branch head is when cloned"
        )
        if sandboxed(spec.kind, target):
            reach = (
                "inside the sandbox: they can write only their checkout and their own folder "
                f"({engine_folder(target)}), not read your home, and they can use your network"
            )
        else:
            reach = (
                f"with your rights (uid {os.getuid()}), without a sandbox: they can read and "
                "change your files and use your network"
            )
        notes = [
            f"TRUST: running a script repository runs its own files ({spec.git_url} {pinned}) "
            f"{reach}. Read them at that commit before you start it.",
            f"the script chooses its own port ({target.port}) and model id",
        ]
        if spec.drafter_env:
            notes.append(
                f"drafter: {spec.drafter_env}={target.drafter}"
                if target.drafter
                else f"drafter: the script's default (choose with --drafter, sets "
                f"{spec.drafter_env})"
            )
        return notes

    def missing(self, spec: ScriptRepoLaunch) -> str | None:
        return None if shutil.which("git") else "git is not on PATH"
