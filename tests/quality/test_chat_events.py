"""A quality request's stream, from a scripted server on loopback: an event of the wrong shape
fails the request with ``bad_event``; before, ``{"choices": "x"}`` raised AttributeError out of
:func:`rigbook.quality.chat.ask` and took the whole suite run with it."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from rigbook.quality.chat import ask
from tests.conftest import scripted_server


async def _ask_server_sending(events: list[str]):
    body = "".join(f"data: {e}\n\n" for e in [*events, "[DONE]"]).encode()
    reply = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n"
    server, url = await scripted_server([reply % len(body) + body])
    async with server, httpx.AsyncClient() as client:
        return await ask(client, url, {"model": "m", "stream": True}, stall_s=5.0)


TOKEN = json.dumps({"choices": [{"delta": {"content": "Bon"}}]})
FINISH = json.dumps({"choices": [{"delta": {}, "finish_reason": "stop"}]})


@pytest.mark.parametrize(
    "bad",
    [
        '{"choices": "x"}',
        '{"choices": [1]}',
        '{"choices": [{"delta": "text"}]}',
        '{"choices": [{"delta": {"content": 7}}]}',
        '{"choices": [{"delta": {}, "finish_reason": 1}]}',
        '{"usage": [1]}',
        "[1, 2]",
    ],
)
def test_an_event_of_the_wrong_shape_fails_the_request(bad):
    reply = asyncio.run(_ask_server_sending([TOKEN, bad, FINISH]))
    assert reply.error == f"bad_event: {bad}"
    assert reply.text == "Bon"


def test_a_well_formed_stream_is_read_whole():
    reply = asyncio.run(_ask_server_sending([TOKEN, TOKEN, FINISH]))
    assert (reply.error, reply.text, reply.finish_reason) == (None, "BonBon", "stop")
