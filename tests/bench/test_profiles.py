"""Profiles are versioned data: each (name, version) is pinned to its content hash."""

import json

import pytest

from rigbook.bench.backend import RequestBodies
from rigbook.bench.profiles import get_profile, list_profiles
from rigbook.errors import InputError

# A changed value needs a new version: add it here, never edit a pinned line.
PINNED = {
    ("seed", 1): "sha256:38ede1fc7392385a7734857050fd2c727f12722b97739386e7398c1d1f168c4a",
    ("quick", 1): "sha256:80965784d533aac942491ace8b189fa1d073c9a6f4493796d25240ab4d82ee7c",
    ("seed", 2): "sha256:e3871c66780a7787629e40219286aca582c689e25c9c5eb91842ded6ce489d69",
    ("quick", 2): "sha256:b9b5d158d4930de0df137f9fc7325754f304e61af78a992a1bd030acae1cf72a",
    (
        "quick-repetitive",
        1,
    ): "sha256:413215dbb8eec6e63b51724aba3c8a502e2b7e45c61dfee445ec65aeda4199fd",
}


def test_every_profile_is_pinned_to_its_hash():
    shipped = {(p.name, p.version): p.content_hash() for p in list_profiles()}
    assert shipped == PINNED


def test_seed_profile_is_the_guides_conditions():
    p = get_profile("seed")
    assert (p.temperature, p.top_p, p.thinking, p.max_tokens, p.hold_length) == (
        0.0,
        1.0,
        False,
        400,
        True,
    )
    assert p.concurrency == (1, 4) and p.workload == "prose" and len(p.prompts()) >= 4


def test_quick_profile_is_small():
    p = get_profile("quick")
    assert 32 <= p.max_tokens <= 64 and p.concurrency == (1, 2)


def test_unknown_profile_is_an_input_error():
    with pytest.raises(InputError) as e:
        get_profile("nope")
    assert e.value.code == "E_INPUT" and "seed" in e.value.remedy


def test_only_values_that_differ_from_the_profile_are_overrides():
    from rigbook.bench.measure import MeasureRequest
    from rigbook.bench.plan import resolve_profile_ref

    seed = get_profile("seed")
    same = resolve_profile_ref(
        seed,
        MeasureRequest(
            url="http://x", concurrency=list(seed.concurrency), max_tokens=seed.max_tokens
        ),
    )
    assert same.overrides == {}
    changed = resolve_profile_ref(seed, MeasureRequest(url="http://x", concurrency=[1, 4, 8]))
    assert changed.overrides == {"concurrency": [1, 4, 8]}


def test_unique_prompts_give_every_request_its_own_prefix():
    """v1 sends its eight prompts over and over (a prefix cache serves the repeats); v2 starts each
    request's prompt with a tag no other request of the run has."""
    v1 = RequestBodies(get_profile("quick", 1), "m", get_profile("quick", 1).prompts(), 48)
    assert v1.body(0) == v1.body(8) == v1.body(16)
    v2 = RequestBodies(get_profile("quick", 2), "m", get_profile("quick", 2).prompts(), 48)
    bodies = [json.loads(v2.body(i)) for i in range(20)]
    prompts = [b["messages"][0]["content"] for b in bodies]
    assert len(set(prompts)) == 20
    # The tag comes first, so no two requests share even the first words of their prompt.
    assert len({p.split(".")[0] for p in prompts}) == 20
    assert all(p.endswith(get_profile("quick").prompts()[i % 8]) for i, p in enumerate(prompts))
    assert get_profile("quick").version == 2 and get_profile("seed").unique_prompts
