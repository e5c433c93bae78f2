"""The bench options are made from the request model: one field is one option everywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from pydantic import Field
from typer.core import TyperGroup, TyperOption
from typer.testing import CliRunner

from rigbook.bench.request import Flag, MeasureRequest
from rigbook.cli.app import app
from rigbook.cli.bench_options import BenchOptions, bench_options, flags
from rigbook.cli.output import JsonOption, handled
from rigbook.reproduce.run import ReproduceRequest


class TenantRequest(MeasureRequest):
    """The request with one field more: the only change a new bench option needs."""

    tenant: Annotated[
        str | None,
        Field(pattern=r"^[a-z]+$", description="Tenant the requests are billed to."),
        Flag("--tenant", unset=" (default: none)"),
    ] = None


def _tenant_app(seen: list[TenantRequest]) -> typer.Typer:
    """A command declared as `rigbook bench` declares its options, over the larger model."""
    tenant_app = typer.Typer()

    @tenant_app.command()
    @bench_options(model=TenantRequest)
    def bench(
        url: str = typer.Argument(...),
        *,
        options: BenchOptions,
        as_json: bool = JsonOption,
    ) -> None:
        with handled(as_json):
            seen.append(options.request(TenantRequest, url=url))

    return tenant_app


def _invoke(target: typer.Typer, *args: str) -> Any:
    return CliRunner().invoke(target, list(args), env={"COLUMNS": "200"})


def _options(command: str) -> dict[str, TyperOption]:
    """The options of one of rigbook's commands, by flag."""
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    found = group.commands[command].params
    return {p.opts[0]: p for p in found if isinstance(p, TyperOption)}


def test_a_field_added_to_the_model_is_an_option_that_reaches_the_request():
    seen: list[TenantRequest] = []
    tenant_app = _tenant_app(seen)
    shown = _invoke(tenant_app, "--help")
    assert shown.exit_code == 0
    assert "--tenant" in shown.output
    assert "Tenant the requests are billed to (default: none)." in shown.output
    ran = _invoke(tenant_app, "http://127.0.0.1:9", "--tenant", "acme", "--concurrency", "1,4")
    assert ran.exit_code == 0, ran.output
    assert seen[0].tenant == "acme" and seen[0].concurrency == [1, 4]
    assert seen[0].url == "http://127.0.0.1:9" and seen[0].max_tokens is None


def test_a_value_the_model_refuses_is_e_input_naming_the_flag_not_a_traceback():
    seen: list[TenantRequest] = []
    ran = _invoke(_tenant_app(seen), "http://127.0.0.1:9", "--tenant", "ACME", "--json")
    assert ran.exit_code == 2 and not seen
    error = json.loads(ran.stdout)["error"]
    assert error["code"] == "E_INPUT"
    assert error["message"].startswith("--tenant 'ACME': String should match pattern")
    assert "Traceback" not in ran.output


def test_bad_levels_are_the_parse_steps_e_input():
    seen: list[TenantRequest] = []
    ran = _invoke(_tenant_app(seen), "http://127.0.0.1:9", "--concurrency", "1,x", "--json")
    error = json.loads(ran.stdout)["error"]
    assert ran.exit_code == 2 and error["code"] == "E_INPUT"
    assert error["message"] == "--concurrency '1,x' is not a list of positive integers"


def test_bench_has_an_option_for_every_flagged_field_with_its_default_and_floor():
    options = _options("bench")
    for name, flag in flags().items():
        option = options[flag.name]
        info = MeasureRequest.model_fields[name]
        assert option.name == name and option.help, name
        assert option.default == info.default, name
        floor = option.min
        ge = next((m.ge for m in info.metadata if hasattr(m, "ge")), None)
        assert floor == (flag.min if flag.min is not None else ge), name


def test_every_flagged_fields_help_is_a_sentence_the_unset_words_go_into():
    for name, flag in flags().items():
        description = MeasureRequest.model_fields[name].description or ""
        assert description.endswith("."), name
        assert not flag.unset or not flag.unset.endswith("."), name


def test_reproduce_repeats_each_level_by_default_as_its_request_does():
    options = _options("reproduce")
    for name in ("profile", "ci_target_pct", "max_repeats", "max_level_s"):
        flag = flags()[name].name
        assert options[flag].default == ReproduceRequest.model_fields[name].default, name
    assert options["--ci-target"].help == (
        "Repeat each level (whole waves) until the 95 % confidence interval of its aggregate "
        "and median per-request rate is within this many percent, e.g. 2."
    )
    assert _options("bench")["--ci-target"].help.endswith(
        "e.g. 2 (default: each level once, no interval)."
    )


@pytest.mark.parametrize("command", ["capacity", "reproduce"])
def test_a_command_takes_the_bench_options_it_names_and_no_other(command):
    options = _options(command)
    bench = _options("bench")
    shared = {f for f in flags().values() if f.name in options}
    assert {"--workload", "--max-tokens", "--client"} <= {f.name for f in shared}
    assert "--duration" not in options and "--workers" not in options
    for flag in shared:
        if flag.name not in ("--out", "--recipe"):  # the commands' own, of other meaning
            assert options[flag.name].min == bench[flag.name].min, flag.name


def test_the_options_are_parsed_as_the_request_is_built_and_the_commands_values_win(
    tmp_path: Path,
):
    given = BenchOptions(values={"max_tokens": 9, "concurrency": "2,8", "out": tmp_path / "a"})
    request = given.request(MeasureRequest, url="http://127.0.0.1:9", out=None)
    assert request.max_tokens == 9 and request.concurrency == [2, 8] and request.out is None
