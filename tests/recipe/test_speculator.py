"""A recipe's speculator read from what recipes carry: the rigbook block, else the launch itself
(the seed record's SPECULATOR/MTP_DEPTH knobs, vLLM's --speculative-config, llama-server's --spec-*)."""

from __future__ import annotations

import json

import pytest

from rigbook.compare import compare_refs
from rigbook.recipe import parse_recipe
from rigbook.recipe.speculator import from_launch, speculator
from tests.conftest import SEED_RECORD

SEED_TP4 = "glm-5-3-flash-qad-csf-on-4x-rtx-pro-6000-blackwell-tp4-reference"


def test_the_public_seed_record_states_its_mtp_drafter_in_its_docker_knobs(seed_record):
    assert "rigbook" not in seed_record  # the record as the public API serves it
    spec = speculator(parse_recipe(seed_record))
    assert spec is not None and (spec.method, spec.draft_length) == ("mtp", 3)
    # So compare knows the claim runs a drafter: the method is no unknown, and the verdict says
    # that neither side states the drafter's acceptance.
    pair = compare_refs([str(SEED_RECORD), SEED_TP4]).pairs[0]
    throughput = next(v for v in pair.verdicts if v.aspect == "throughput")
    method = next(r for r in throughput.reasons if r.condition == "speculative_method")
    assert (method.kind, method.a, method.b) == ("unknown_one_side", "mtp", None)
    assert any(
        r.condition == "speculative_acceptance_length" and "unknown on both sides" in r.message
        for r in throughput.reasons
    ), [r.message for r in throughput.reasons]


@pytest.mark.parametrize(
    "argv,env,expected",
    [
        (["docker", "run", "-e", "SPECULATOR=eagle3", "-e", "MTP_DEPTH=2", "img"], {}, ("eagle3", None, 2)),
        ([], {"SPECULATOR": "mtp", "MTP_DEPTH": "3"}, ("mtp", None, 3)),
        (
            ["vllm", "serve", "m", "--speculative-config",
             json.dumps({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3})],
            {}, ("ngram", None, 3),
        ),
        (
            ["vllm", "serve", "m", "--speculative-config={\"model\": \"org/draft\", \"num_speculative_tokens\": 5}"],
            {}, ("draft_model", "org/draft", 5),
        ),
        (
            ["llama-server", "--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "3"],
            {}, ("ngram-simple", None, None),
        ),
        (["llama-server", "-md", "d.gguf", "--spec-draft-n-max", "4"], {}, ("draft-simple", "d.gguf", 4)),
        (["llama-server", "--spec-type", "none"], {}, ("none", None, None)),
        (["vllm", "serve", "m", "--speculative-config", "not json"], {}, None),
        (["llama-server", "-c", "4096"], {}, None),
        (["docker", "run", "-e", "MTP_DEPTH=3", "img"], {}, None),
    ],
)  # fmt: skip
def test_a_launch_states_its_speculator(argv, env, expected):
    spec = from_launch(argv, env)
    got = None if spec is None else (spec.method, spec.drafter, spec.draft_length)
    assert got == expected


def test_a_recipes_own_block_wins_over_its_launch(seed_record):
    record = seed_record | {"rigbook": {"speculative": {"method": "none"}}}
    spec = speculator(parse_recipe(record))
    assert spec is not None and spec.method == "none"
