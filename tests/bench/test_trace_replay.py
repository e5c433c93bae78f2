"""A trace replayed against the synthetic server: exact prompt lengths by the server's tokenizer,
shared blocks as shared text, held reply lengths, and the schedule lag stated."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from rigbook.bench.profiles import get_profile
from rigbook.bench.telemetry import Sampler
from rigbook.bench.workloads.trace import TraceRequest, parse_trace
from rigbook.bench.workloads.trace_prompts import PromptMaker, calibrate
from rigbook.bench.workloads.trace_run import make_prompts, run_trace_cell
from rigbook.errors import EndpointError
from tests.bench.helpers import synthetic_server


@pytest.fixture(scope="module")
def url():
    with synthetic_server("--rate 400 --ttft 0.005") as u:
        yield u


def _trace(n: int, gap_s: float, block: int = 16) -> bytes:
    rows = []
    for i in range(n):
        ids = " ".join(str(h) for h in ([7, 8] if i % 2 else [7]))
        rows.append(f"{i * gap_s:.3f},{20 + 3 * i},{4 + i % 3},{ids}")
    return ("at_s,input_tokens,output_tokens,hash_ids\n" + "\n".join(rows) + "\n").encode()


def test_shared_blocks_are_shared_text_and_the_rest_is_a_request_own(url):
    async def main():
        async with httpx.AsyncClient() as client:
            maker = await calibrate(client, url, "synthetic", 16, tag="t")
            a = TraceRequest(at_s=0, input_tokens=40, output_tokens=1, hash_ids=(1, 2), line=1)
            b = TraceRequest(at_s=0, input_tokens=40, output_tokens=1, hash_ids=(1, 3), line=2)
            c = TraceRequest(at_s=0, input_tokens=40, output_tokens=1, line=3)
            return maker, [await maker.prompt(r, i) for i, r in enumerate((a, b, c))]

    maker, made = asyncio.run(main())
    assert maker.overhead == 0  # the synthetic server counts only the message's words
    assert all(exact for _, exact in made)
    a, b, c = (text.split() for text, _ in made)
    assert [len(w) for w in (a, b, c)] == [40, 40, 40]
    assert a[:16] == b[:16] == maker.block(1)  # block 1 shared
    assert a[16:32] != b[16:32]  # blocks 2 and 3 differ
    assert a[32:] != b[32:] and c[:16] != a[:16]  # own tails, and no blocks: nothing shared
    # Another run (another tag) shares nothing with this one.
    other = PromptMaker(maker.counter, maker.words, 0, 16, tag="u")
    assert other.block(1) != maker.block(1)


def test_a_prompt_the_tokenizer_counts_off_is_corrected_until_exact():
    """A tokenizer that reads one word in five as two tokens: the maker counts, trims and
    counts again until the message is the target."""

    class Counter:
        async def count(self, text: str) -> int:
            words = text.split()
            return len(words) + sum(1 for w in words if w == "zebra")

    words = ["apple", "zebra", "lemon", "grape", "melon"]
    req = TraceRequest(at_s=0, input_tokens=53, output_tokens=1, line=1)
    # Each tag draws other words: every draw must end exact.
    for tag in range(30):
        maker = PromptMaker(Counter(), words, 3, 8, tag=str(tag))  # type: ignore[arg-type]
        text, exact = asyncio.run(maker.prompt(req, 0))
        assert exact and asyncio.run(Counter().count(text)) == 50, tag


def test_a_server_without_a_tokenizer_is_e_trace_prompt():
    async def main():
        async def answer(reader, writer):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server, httpx.AsyncClient() as client:
            await calibrate(client, f"http://127.0.0.1:{port}", "m", 16)

    with pytest.raises(EndpointError) as e:
        asyncio.run(main())
    assert e.value.code == "E_TRACE_PROMPT" and "counts no tokens" in e.value.message


def test_replay_cell_against_the_synthetic_server(url):
    trace = parse_trace(_trace(24, 0.05), "t.csv", block_tokens=16)

    async def main():
        async with httpx.AsyncClient() as client:
            prompts, overhead = await make_prompts(client, url, "synthetic", trace)
            return await run_trace_cell(
                index=0,
                trace=trace,
                prompts=prompts,
                chat_template_tokens=overhead,
                profile=get_profile("quick"),
                model="synthetic",
                url=url,
                client_kind="python",
                stall_s=30.0,
                speed=2.0,
                max_lag_ms=10_000.0,
                metrics=client,
                sampler=Sampler(None, "no GPU in tests"),
                journal=None,
                stop=asyncio.Event(),
            )

    cell, replayed = asyncio.run(main())
    assert cell.valid, cell.invalid_reasons
    assert len(cell.requests) == 24 and replayed.requests_sent == 24
    # Each request's prompt is the trace's input length, as the server counted it, and its
    # reply the trace's output length.
    assert replayed.prompt_tokens_exact == replayed.prompt_tokens_counted == 24
    for r in cell.requests:
        planned = trace.requests[r.index]
        assert r.prompt_tokens == planned.input_tokens
        assert r.output_tokens == planned.output_tokens
    # Planned at the trace's times over the speed, and each request's lag stated.
    assert replayed.planned_s == pytest.approx([i * 0.025 for i in range(24)], abs=1e-6)
    assert len(replayed.lag_ms) == 24 and replayed.lag is not None
    assert replayed.lag.requests == 24 and not replayed.lag.late
    assert 0 <= replayed.lag.p50_ms <= replayed.lag.p99_ms <= replayed.lag.max_ms
