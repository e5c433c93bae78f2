"""Prompts of a trace's exact input lengths, made with the server's own tokenizer.

The text is words the server's tokenizer reads as one token each (checked word by word at
``/tokenize``), so a prompt of N such words is N tokens; each prompt is counted again before the
replay and trimmed or lengthened until it is exact. The chat template's own tokens (the role
markers around the message) are measured once with a one-token request and taken off every
prompt's word count, so the prompt the engine sees is the trace's input length.

A trace's shared blocks (``hash_ids``) become shared text: block id ``h`` is the same
``block_tokens`` words in every request that names it, at the same place, so an engine's prefix
cache sees the sharing the trace recorded. The words of each block and of each request's own
tail are drawn from a seed that holds a tag of the run, so nothing an earlier run left in the
cache is shared with this one.
"""

from __future__ import annotations

import random
import re
import secrets
from importlib.resources import files

import httpx

from rigbook.bench.workloads.trace import TraceRequest
from rigbook.errors import EndpointError
from rigbook.openai.body import chat_body
from rigbook.openai.urls import chat_url
from rigbook.quality.server import TokenCounter

# A vocabulary this large keeps two random prompts from sharing more than a word's prefix.
MIN_WORDS = 64
# Rounds of counting and correcting one prompt before it is declared not exact.
ROUNDS = 8


def _candidates() -> list[str]:
    text = files("rigbook.bench").joinpath("data", "prompts_prose_v1.json").read_text("utf-8")
    return sorted(set(re.findall(r"\b[a-z]{3,9}\b", text.lower())))


class PromptMaker:
    """Makes a trace request's prompt text (see the module's docstring)."""

    def __init__(
        self,
        counter: TokenCounter,
        words: list[str],
        overhead: int,
        block_tokens: int,
        tag: str | None = None,
    ) -> None:
        self.counter, self.words, self.overhead = counter, words, overhead
        self.block_tokens = block_tokens
        self.tag = tag or secrets.token_hex(4)
        self._blocks: dict[int, list[str]] = {}

    def _draw(self, seed: str, n: int) -> list[str]:
        rng = random.Random(f"{self.tag}-{seed}")
        return rng.choices(self.words, k=n)

    def block(self, hash_id: int) -> list[str]:
        """Block ``hash_id``'s words: the same in every request of this run."""
        if hash_id not in self._blocks:
            self._blocks[hash_id] = self._draw(f"block-{hash_id}", self.block_tokens)
        return self._blocks[hash_id]

    def content_tokens(self, request: TraceRequest) -> int:
        """Tokens of the message itself: the input length less the chat template's own."""
        return max(1, request.input_tokens - self.overhead)

    def words_of(self, request: TraceRequest, index: int) -> list[str]:
        """The message's words: its shared blocks in order, then words of its own."""
        n = self.content_tokens(request)
        shared: list[str] = []
        for h in request.hash_ids:
            shared += self.block(h)
        shared = shared[:n]
        return shared + self._draw(f"request-{index}", n - len(shared))

    async def prompt(self, request: TraceRequest, index: int) -> tuple[str, bool]:
        """Request ``index``'s message and whether its token count is exact. Words are added
        from its own draw or taken off its end until the server's count is the target."""
        want = self.content_tokens(request)
        words = self.words_of(request, index)
        spare = self._draw(f"request-{index}-spare", want)
        for _ in range(ROUNDS):
            got = await self.counter.count(" ".join(words))
            if got is None:
                raise _no_tokenizer()
            if got == want:
                return " ".join(words), True
            if got > want:
                words = words[: max(1, len(words) - (got - want))]
            else:
                words = words + spare[: want - got]
                spare = spare[want - got :] or self._draw(f"request-{index}-more", want)
        return " ".join(words), False


def _no_tokenizer() -> EndpointError:
    return EndpointError(
        "E_TRACE_PROMPT",
        "the server counts no tokens (no /tokenize or /extras/tokenize/count answered)",
    )


async def _template_overhead(
    client: httpx.AsyncClient, url: str, model: str, counter: TokenCounter, word: str
) -> int:
    """The chat template's tokens around a message: a one-token request's prompt_tokens less
    the message's own count."""
    try:
        resp = await client.post(
            chat_url(url),
            json=chat_body(model, word, max_tokens=1, temperature=0.0, stream=False),
            timeout=120.0,
        )
        prompt = resp.json()["usage"]["prompt_tokens"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise EndpointError(
            "E_TRACE_PROMPT",
            f"a one-token request to measure the chat template's tokens failed: {exc}",
        ) from None
    own = await counter.count(word)
    if own is None:
        raise _no_tokenizer()
    return max(0, int(prompt) - own)


async def calibrate(
    client: httpx.AsyncClient, url: str, model: str, block_tokens: int, tag: str | None = None
) -> PromptMaker:
    """A prompt maker for this server: its one-token words and its chat template's tokens."""
    counter = TokenCounter(client, url.rstrip("/"), model)
    words: list[str] = []
    for word in _candidates():
        # Twice, space between: one token each way the word appears in a prompt.
        got = await counter.count(f"{word} {word}")
        if got is None:
            raise _no_tokenizer()
        if got == 2:
            words.append(word)
    if len(words) < MIN_WORDS:
        raise EndpointError(
            "E_TRACE_PROMPT",
            f"only {len(words)} filler words are one token each to this server's tokenizer "
            f"(at least {MIN_WORDS} are needed)",
        )
    overhead = await _template_overhead(client, url, model, counter, words[0])
    return PromptMaker(counter, words, overhead, block_tokens, tag)
