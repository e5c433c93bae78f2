"""How an SSE payload becomes a token: the Python parser (``client.apply_payload``) and the
compiled reader's reading of a token event (``_reader_events.c``), held equal.

A server is input rigbook does not control: an event of any shape fails its request with a
reason and leaves the request's arrays of one length. The compiled reader reads in C only the
events it is sure of, and must then do exactly what the Python parser does; real servers' events
must be among those (or the compiled client gains nothing), and fuzzed ones, valid JSON or not,
must never make the two disagree.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigbook.bench import compiled
from rigbook.openai.stream import RawRequest, apply_payload, apply_tokens
from tests.bench.helpers import outcome

STREAMS = Path(__file__).parent.parent / "fixtures" / "streams"


def payloads_of(stream: bytes) -> list[bytes]:
    """The data of each event of a captured stream, ``[DONE]`` left out."""
    events = [e for e in stream.replace(b"\r\n", b"\n").split(b"\n\n") if e.startswith(b"data: ")]
    return [e[6:] for e in events if e != b"data: [DONE]"]


def state(raw: RawRequest) -> dict:
    return {
        **outcome(raw),
        "times": list(raw.times),
        "reasoning_tokens": raw.reasoning_tokens_reported,
    }


def parsed(payloads: list[bytes], start: RawRequest | None = None) -> RawRequest:
    raw = start or RawRequest(sent=0.0)
    for k, payload in enumerate(payloads):
        apply_payload(raw, payload, 1.0 + k)
    return raw


# --- any shape ------------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(
    choices=JSON,
    delta=JSON,
    usage=JSON,
    count=JSON,
    finish=JSON,
)
def test_an_event_of_any_shape_fails_its_request_and_keeps_the_arrays_whole(
    choices, delta, usage, count, finish
):
    """Before: ``{"choices": "x"}`` raised AttributeError out of the parser (the compiled client's
    whole batch of streams was lost with it), and a usage of ``"x"`` tokens left the request with
    one more timestamp than counts."""
    events = [
        {"choices": choices},
        {"choices": [{"delta": delta, "finish_reason": finish}]},
        {"choices": [{"delta": {"content": "a"}}], "usage": usage},
        {"choices": [{"delta": {"content": "a"}}], "usage": {"completion_tokens": count}},
        {"choices": [], "usage": {"prompt_tokens": count, "completion_tokens_details": delta}},
    ]
    for event in events:
        raw = parsed([json.dumps(event).encode()])
        assert len(raw.times) == len(raw.usage) == len(raw.reasoning)
        assert raw.error is None or raw.error.startswith(("bad_event: ", "in_band_error: "))
        assert raw.finish_reason is None or type(raw.finish_reason) is str
        assert raw.prompt_tokens is None or type(raw.prompt_tokens) is int
        if raw.final_usage is not None:
            assert type(raw.final_usage.get("completion_tokens", 0)) in (int, type(None))


@pytest.mark.parametrize(
    "payload",
    [
        b'{"choices": "x"}',
        b'{"choices": [1]}',
        b'{"choices": [{"delta": "text"}]}',
        b'{"usage": [1]}',
        b'{"choices": [{"delta": {"content": "a"}}], "usage": {"completion_tokens": "3"}}',
        b'{"choices": [{"delta": {"content": "a"}}], "usage": {"completion_tokens": -2}}',
        b'{"choices": [{"delta": {}, "finish_reason": 7}]}',
    ],
)
def test_events_of_the_wrong_shape_are_bad_events(payload):
    raw = parsed([payload])
    assert raw.error == f"bad_event: {payload.decode()}"
    assert raw.events == 0


# --- the compiled reading of a token event ----------------------------------------------------------

needs_reader = pytest.mark.skipif(not compiled.available(), reason="the reader was not built")


def read_in_c(payloads: list[bytes]) -> RawRequest | None:
    """What the compiled reader gives for these payloads, read in C and handed over as one run of
    tokens, as ``_reader.c`` hands them; None if one is left to Python."""
    from rigbook.bench._reader import token_event

    times, flags, counts, usage = b"", b"", b"", None
    for k, payload in enumerate(payloads):
        token = token_event(payload)
        if token is None:
            return None
        reasoning, count, has_usage = token
        times += struct.pack("d", 1.0 + k)
        flags += bytes([reasoning])
        counts += struct.pack("q", count)
        usage = payload if has_usage else usage
    raw = RawRequest(sent=0.0)
    apply_tokens(raw, times, flags, counts, usage)
    return raw


@needs_reader
@pytest.mark.parametrize("name", ["llama-server.sse", "vllm.sse"])
def test_a_real_servers_token_events_are_read_in_c_as_python_reads_them(name):
    payloads = payloads_of((STREAMS / name).read_bytes())
    tokens = [p for p in payloads if parsed([p]).events == 1 and parsed([p]).finish_reason is None]
    assert len(tokens) >= 10
    native = read_in_c(tokens)
    assert native is not None, "a real server's token event was left to Python"
    assert state(native) == state(parsed(tokens))


KEYS = ["choices", "delta", "content", "reasoning_content", "reasoning", "usage", "error"]
KEYS += ["finish_reason", "completion_tokens", "prompt_tokens", "completion_tokens_details"]
KEYS += ["tool_calls"]
TEXT = st.none() | st.sampled_from(
    ["", "a", "é", "\u2028", "\x00", '"', "\\", "\U00010000", "\ud800"]
)
COUNT = (
    st.none()
    | st.integers(-2, 2**64)
    | st.floats()
    | st.booleans()
    | st.sampled_from(["3", "", [], {}])
)
DELTA = st.fixed_dictionaries(
    {},
    optional={
        "role": st.just("assistant"),
        "content": TEXT | st.integers(0, 1),
        "reasoning_content": TEXT | st.booleans(),
        "reasoning": TEXT,
        "tool_calls": st.none() | st.just([{"index": 0}]),
    },
)
CHOICE = st.fixed_dictionaries(
    {},
    optional={
        "index": st.integers(0, 2),
        "delta": DELTA | st.none() | TEXT,
        "finish_reason": st.none() | st.sampled_from(["stop", "length", "", 0]),
        "logprobs": st.none(),
    },
)
USAGE = st.fixed_dictionaries(
    {},
    optional={
        "prompt_tokens": COUNT,
        "completion_tokens": COUNT,
        "total_tokens": COUNT,
        "completion_tokens_details": st.none() | st.fixed_dictionaries({"reasoning_tokens": COUNT}),
    },
)
ANY_EVENT = st.fixed_dictionaries(
    {},
    optional={
        "id": st.text(max_size=3),
        "choices": st.lists(CHOICE, max_size=3) | st.none() | TEXT,
        "usage": USAGE | st.none() | TEXT,
        "error": st.none() | TEXT | st.just({"message": "engine died"}),
        "created": st.integers(0, 2**40) | st.floats(-1e300, 1e300),
        "object": st.just("chat.completion.chunk"),
    },
)
# Most of a stream: a token, with or without the usage so far.
WORDS = st.text(min_size=1, max_size=5) | st.sampled_from(["é", "\n", '"', "\u2028", "\U00010000"])
TOKEN_EVENT = st.fixed_dictionaries(
    {
        "choices": st.lists(
            st.fixed_dictionaries(
                {
                    "delta": st.fixed_dictionaries(
                        {},
                        optional={
                            "content": WORDS,
                            "reasoning_content": WORDS,
                            # a tool call in one choice, reasoning in the next: content first
                            "tool_calls": st.none() | st.just([{"index": 0}]),
                        },
                    )
                },
                optional={
                    "index": st.integers(0, 1),
                    "finish_reason": st.none(),
                    "logprobs": st.none(),
                },
            ),
            min_size=1,
            max_size=2,
        )
    },
    optional={
        "id": st.text(max_size=3),
        "created": st.integers(0, 2**40) | st.floats(-1e300, 1e300),
        "usage": st.none()
        | st.fixed_dictionaries(
            {"prompt_tokens": st.integers(0, 10**6)},
            optional={
                "completion_tokens": st.none() | st.integers(0, 10**6),
                "total_tokens": COUNT,
            },
        ),
    },
)
EVENT = TOKEN_EVENT | ANY_EVENT


@st.composite
def payloads(draw) -> bytes:
    """An event as a server might write it, then perhaps damaged: a key repeated, a key spelt
    with an escape, bytes inserted, replaced or cut."""
    text = json.dumps(
        draw(EVENT),
        ensure_ascii=draw(st.booleans()),
        separators=draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\t", " :\n")])),
    )
    data = text.encode("utf-8", "surrogatepass")
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))):
        at = draw(st.integers(0, len(data)))
        match draw(st.sampled_from(["repeat", "escape", "insert", "replace", "cut"])):
            case "repeat":
                brace = data.find(b"{", at)
                if brace >= 0:
                    key, value = (
                        draw(st.sampled_from(KEYS)),
                        draw(st.sampled_from(["null", '"x"', "1", "[]", "{}"])),
                    )
                    data = data[: brace + 1] + f'"{key}": {value}, '.encode() + data[brace + 1 :]
            case "escape":
                key = draw(st.sampled_from(KEYS))
                data = data.replace(
                    f'"{key}"'.encode(), f'"\\u00{ord(key[0]):02x}{key[1:]}"'.encode(), 1
                )
            case "insert":
                data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at:]
            case "replace":
                data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
            case "cut":
                data = data[:at]
    return data


@needs_reader
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=payloads())
def test_the_c_reading_of_any_payload_is_the_parsers_or_none(payload):
    """Where C reads a payload as a token, the Python parser reads the same token and nothing
    else, whatever the payload; where C is not sure, it leaves the payload to Python."""
    native = read_in_c([payload])
    if native is not None:
        assert state(native) == state(parsed([payload]))


@needs_reader
@settings(max_examples=300, deadline=None)
@given(events=st.lists(EVENT, min_size=1, max_size=6))
def test_a_run_of_tokens_folds_as_its_events_do_one_by_one(events):
    """A run's usage (the final usage, the prompt count) is its last event's, as the parser's
    fold of the events one by one leaves it."""
    data = [json.dumps(e).encode("utf-8", "surrogatepass") for e in events]
    native = read_in_c(data)
    if native is not None:
        assert state(native) == state(parsed(data))
