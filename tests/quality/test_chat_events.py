"""A quality request's stream, from a scripted server on loopback: an event of the wrong shape
fails the request with ``bad_event``; before, ``{"choices": "x"}`` raised AttributeError out of
:func:`rigbook.quality.chat.ask` and took the whole suite run with it."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from rigbook.quality.chat import ask


async def _ask_server_sending(events: list[str]):
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
        await reader.readexactly(length)
        body = "".join(f"data: {e}\n\n" for e in [*events, "[DONE]"]).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
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
