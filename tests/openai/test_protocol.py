"""rigbook.openai: the bodies each command sends are those it sent before the protocol had one
module (the bench's byte for byte, so its numbers cannot move), the model pick, and the fold's
reply text."""

from __future__ import annotations

import copy

import orjson
import pytest

from rigbook.bench.backend import RequestBodies, chat_payload
from rigbook.bench.profiles import get_profile
from rigbook.errors import EndpointError
from rigbook.openai.body import chat_body, encode, unstreamed, with_messages
from rigbook.openai.models import pick_model
from rigbook.openai.stream import RawRequest, apply_payload
from rigbook.openai.urls import chat_url, models_url, server_url
from rigbook.quality.chat import body as quality_body
from rigbook.quality.result import Sampling


def _bench_body_as_built_before(profile, model: str, prompt: str, max_tokens: int) -> dict:
    body: dict = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": profile.temperature,
        "top_p": profile.top_p,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        "chat_template_kwargs": {"enable_thinking": profile.thinking, "thinking": profile.thinking},
    }
    if profile.hold_length:
        body["ignore_eos"] = True
        body["min_tokens"] = max_tokens
    return body


@pytest.mark.parametrize("hold", [True, False])
def test_the_bench_body_is_byte_for_byte_what_it_was(hold):
    profile = get_profile("quick", 1).model_copy(update={"hold_length": hold})
    made = encode(chat_payload(profile, "m", "Tell a story.", 48))
    assert made == orjson.dumps(_bench_body_as_built_before(profile, "m", "Tell a story.", 48))


def test_a_unique_prompt_is_tagged_as_before_and_leaves_the_template_alone():
    profile = get_profile("quick", 1).model_copy(update={"unique_prompts": True})
    bodies = RequestBodies(profile, "m", ["Tell a story."], 48)
    before = copy.deepcopy(bodies._payloads)
    sent = orjson.loads(bodies.body(0))
    assert sent["messages"][0]["content"] == f"Request {bodies._tag}-1. Tell a story."
    assert bodies._payloads == before
    assert sent | {"messages": before[0]["messages"]} == before[0]


def test_the_quality_body_and_its_unstreamed_twin():
    made = quality_body("m", "Q?", Sampling(max_tokens=16, seed=3))
    assert list(made) == [
        "model", "messages", "max_tokens", "temperature", "top_p", "seed", "stream", "stream_options"
    ]  # fmt: skip
    assert made["stream_options"] == {"include_usage": True}
    single = unstreamed(made, max_tokens=1)
    assert "stream_options" not in single and (single["stream"], single["max_tokens"]) == (False, 1)


def test_a_conversation_replaces_only_the_messages():
    template = chat_body("m", "", max_tokens=8, temperature=0.0, stream=True)
    talk = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert with_messages(template, talk) == template | {"messages": talk}
    assert template["messages"] == [{"role": "user", "content": ""}]


def test_the_chat_url_takes_either_form_of_the_base():
    assert chat_url("http://h:1/v1/") == chat_url("http://h:1") == "http://h:1/v1/chat/completions"


def test_paths_beside_v1_and_the_model_list_are_joined_to_the_base():
    # `up` probes /health and the model list on a URL that may have been pasted with /v1
    assert server_url("http://h:1/v1", "/health") == server_url("http://h:1/", "health")
    assert server_url("http://h:1/v1", "/health") == "http://h:1/health"
    assert models_url("http://h:1/v1/") == models_url("http://h:1") == "http://h:1/v1/models"


def test_the_model_pick():
    assert pick_model("u", ["a", "b"], None) == "a"
    assert pick_model("u", ["a", "b"], "b") == "b"
    assert pick_model("u", [], "x", trust_empty=True) == "x"
    for served, wanted in [([], None), (["a"], "x"), ([], "x")]:
        with pytest.raises(EndpointError) as caught:
            pick_model("u", served, wanted)
        assert caught.value.code == "E_MODEL_ID"
    with pytest.raises(EndpointError, match="served: a"):
        pick_model("u", ["a"], "x", trust_empty=True)


def _fold(raw: RawRequest, *events: dict) -> RawRequest:
    for k, event in enumerate(events):
        apply_payload(raw, orjson.dumps(event), 1.0 + k)
    return raw


def test_the_fold_keeps_the_text_only_where_asked_and_counts_the_same_tokens():
    events = [
        {"choices": [{"delta": {"reasoning_content": "hm"}}]},
        {"choices": [{"delta": {"content": "Bon"}}]},
        {"choices": [{"delta": {"content": "jour"}}]},
        {"choices": [{"delta": {}, "finish_reason": "stop"}], "timings": {"cache_n": 5}},
    ]
    plain = _fold(RawRequest(sent=0.0), *events)
    keeping = RawRequest(sent=0.0)
    keeping.text = []
    _fold(keeping, *events)
    assert plain.text is None and keeping.text == ["Bon", "jour"]
    for raw in (plain, keeping):
        assert list(raw.times) == [1.0, 2.0, 3.0] and list(raw.reasoning) == [1, 0, 0]
        assert (raw.finish_reason, raw.cache_n, raw.error) == ("stop", 5, None)


def test_content_that_is_no_string_fails_a_request_that_keeps_the_text():
    raw = RawRequest(sent=0.0)
    raw.text = []
    _fold(raw, {"choices": [{"delta": {"content": "a"}}]}, {"choices": [{"delta": {"content": 7}}]})
    assert raw.error is not None and raw.error.startswith("bad_event")
    assert raw.text == ["a"] and len(raw.times) == len(raw.usage) == 1
