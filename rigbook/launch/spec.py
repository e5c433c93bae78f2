"""Which launch spec a recipe has: its `rigbook.launch` block, or one read from the record's
`config.launch` argv."""

from __future__ import annotations

from pydantic import ValidationError

from rigbook.errors import InputError, RecipeInvalid
from rigbook.launch.docker_args import parse_options
from rigbook.ports import port_or_none
from rigbook.recipe.schema import DockerLaunch, LaunchSpec, Recipe, SglangLaunch, VllmLaunch


def _from_docker_run(argv: list[str]) -> DockerLaunch:
    """`docker run [OPTIONS] IMAGE [ARGS]` → env knobs, the other options, the image."""
    options, image_at = parse_options(argv[2:], stop_at_positional=True)
    env: dict[str, str] = {}
    args: list[str] = []
    for option in options:
        if option.name == "--env" and option.value is not None and "=" in option.value:
            key, val = option.value.split("=", 1)
            env[key] = val
        else:
            args.extend(option.tokens)
    rest = argv[2 + image_at :]
    if not rest:
        raise InputError("E_RECIPE_INVALID", "config.launch is a `docker run` without an image")
    if len(rest) > 1:
        raise InputError(
            "E_RECIPE_INVALID",
            f"config.launch passes a command after the image ({rest[1]!r}); "
            "write a rigbook.launch block for it",
        )
    return DockerLaunch(
        image=rest[0], env=env, args=args, container_port=port_or_none(env.get("PORT"))
    )


def launch_spec(recipe: Recipe) -> LaunchSpec:
    """The recipe's launch spec; E_RECIPE_INVALID when it has none that rigbook can run."""
    if recipe.ext.launch is not None:
        return recipe.ext.launch
    try:
        return _from_record(recipe)
    except ValidationError as exc:
        # config.launch is the public record's argv: it is held to the launch block's rules.
        raise RecipeInvalid(
            "E_RECIPE_INVALID",
            f"recipe {recipe.slug}: config.launch does not pass the launch rules",
            details=[f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()],
        ) from None


def _from_record(recipe: Recipe) -> LaunchSpec:
    argv = recipe.config.launch
    if argv[:2] == ["docker", "run"]:
        return _from_docker_run(argv)
    if argv[:2] == ["vllm", "serve"] and len(argv) > 2:
        return VllmLaunch(model=argv[2], args=argv[3:])
    if len(argv) > 2 and argv[1:3] == ["-m", "sglang.launch_server"]:
        model_at = argv.index("--model-path") + 1 if "--model-path" in argv else None
        if model_at and model_at < len(argv):
            return SglangLaunch(
                model=argv[model_at], args=argv[3 : model_at - 1] + argv[model_at + 1 :]
            )
    shown = " ".join(argv) if argv else "(empty)"
    raise InputError(
        "E_RECIPE_INVALID",
        f"recipe {recipe.slug} has no launch rigbook can run: config.launch is {shown}",
        remedy="Add a `rigbook.launch` block (docs/launch.md lists the kinds), or pick a recipe "
        "that has one.",
    )
