"""`rigbook needle`: salted facts hidden among decoys in a long prompt, asked for, timed.

For each context length and depth one probe is sent cold (its own salt, so nothing cached
could help); with ``warm`` the same prompt is sent again at once. The haystack is sized with
the server's tokenizer where it has one, else from the usage of calibration requests; the
prompt tokens recorded are always the ones the server's usage counted for the probe itself,
and a count below what was sent is a truncation (``E_PROMPT_TRUNCATED``), never a retrieval
failure.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import httpx

from rigbook.errors import EndpointError, InputError
from rigbook.quality import haystack
from rigbook.quality.chat import Reply, ask, body, count_prompt
from rigbook.quality.result import (
    Decoy,
    Endpoint,
    Fact,
    NeedleConditions,
    NeedleProbe,
    NeedleResult,
    RunInfo,
    Sampling,
    machine_now,
    save,
)
from rigbook.quality.server import TokenCounter, identify, served_context
from rigbook.recipe.schema import PerfPoint, QualityMeasure

# Tokens kept free beside the user message: the chat template's own tokens and the reply.
TEMPLATE_RESERVE = 64
CALIBRATION_SENTENCES = 200
# A server's count may fall short of the tokenizer's by a few tokens where the message meets the
# chat template; below this it cut the prompt.
TOKENIZER_SLACK = 16
# Without a tokenizer the size is an estimate from calibration: a count under this share of it
# is a cut.
ESTIMATE_SHARE = 0.9


@dataclass
class NeedleSpec:
    """What to run; ``contexts`` may hold None for the served maximum."""

    url: str
    model: str | None
    contexts: list[int | None]
    depths: list[float]
    facts: int
    seed: int
    warm: bool
    out: Path
    recipe: str | None = None
    recipe_context: int | None = None
    reply_tokens: int | None = None
    stall_s: float = 900.0

    def reply_cap(self) -> int:
        """Reply tokens: as given, else room for a `VAULT: CODE` line per fact (48 for two)."""
        return self.reply_tokens or 16 * self.facts + 16


def _context_error(ctx: int, served: int | None, why: str) -> EndpointError:
    return EndpointError(
        "E_CONTEXT",
        f"the server refused a {ctx}-token context: {why}",
        f"Use --context {served} or less (its served context)."
        if served
        else "Use a smaller --context, or start the server with a longer one.",
    )


class _Sizer:
    """Sentences of filler per token, and the exact message count where a tokenizer exists."""

    def __init__(self, client: httpx.AsyncClient, spec: NeedleSpec, model: str):
        self.client, self.spec, self.model = client, spec, model
        self.counter = TokenCounter(client, spec.url, model)
        self.per_sentence = 0.0
        self.fixed = 0.0
        self.source = ""

    async def calibrate(self) -> None:
        sample = haystack.filler(self.spec.seed, CALIBRATION_SENTENCES)
        counted = await self.counter.count(" ".join(sample))
        if counted is not None:
            self.per_sentence, self.source = (
                counted / len(sample),
                f"tokenizer {self.counter.method}",
            )
            return
        sampling = Sampling(seed=self.spec.seed, max_tokens=1)
        sizes = (20, 110, len(sample))
        counts = []
        for size in sizes:
            said = await count_prompt(
                self.client,
                self.spec.url,
                body(self.model, " ".join(sample[:size]), sampling),
                self.spec.stall_s,
            )
            if said.prompt_tokens is None:
                raise EndpointError(
                    "E_HTTP",
                    "the server neither counts tokens nor reports usage: "
                    f"{said.error or 'no usage in its answer'}",
                    "Use an engine that answers usage (vLLM, SGLang, llama.cpp).",
                )
            counts.append(said.prompt_tokens)
        first = (counts[1] - counts[0]) / (sizes[1] - sizes[0])
        second = (counts[2] - counts[1]) / (sizes[2] - sizes[1])
        # Prose of one kind costs the same per sentence: a second step much cheaper than the
        # first means the server dropped part of the longer message.
        if first <= 0 or second < 0.85 * first:
            raise EndpointError(
                "E_PROMPT_TRUNCATED",
                f"calibration: the server counted {counts[0]}, {counts[1]} and {counts[2]} "
                f"prompt tokens for {sizes[0]}, {sizes[1]} and {sizes[2]} sentences of prose: "
                f"it cut the longer messages (its context is about {max(counts)} tokens)",
            )
        self.per_sentence = (counts[2] - counts[0]) / (sizes[2] - sizes[0])
        self.fixed = counts[0] - sizes[0] * self.per_sentence
        self.source = "usage of three calibration requests (3% margin)"

    def least_count(self, sentences: int, message_tokens: int | None) -> int:
        """The fewest prompt tokens a server that kept the whole message could count."""
        if message_tokens is not None:
            return message_tokens - TOKENIZER_SLACK
        return int(ESTIMATE_SHARE * (self.fixed + sentences * self.per_sentence))

    async def fit(self, message: Callable[[int], str], target: int) -> tuple[int, int | None]:
        """(sentences, message tokens) filling ``target`` tokens; the count is None without a
        tokenizer (the size then keeps a 3% margin)."""
        if self.counter.method is None or self.counter.method == "":
            return max(0, int(0.97 * target / self.per_sentence) - 40), None
        n = max(0, int(target / self.per_sentence))
        for _ in range(6):
            tokens = await self.counter.count(message(n))
            if tokens is None:
                break
            if tokens <= target and (target - tokens) < 2 * self.per_sentence + 8:
                return n, tokens
            n = max(
                0, n + int((target - tokens) / self.per_sentence) - (1 if tokens > target else 0)
            )
        tokens = await self.counter.count(message(n))
        if tokens is not None and tokens > target:
            raise EndpointError("E_CONTEXT", f"could not size a haystack under {target} tokens")
        return n, tokens


def _probe(
    ctx: int,
    depth: float,
    cache: Literal["cold", "warm"],
    lay: haystack.Layout,
    prose: list[str],
    sent: Reply,
    message_tokens: int | None,
    least: int,
    salt: str,
) -> NeedleProbe:
    truncated = None if sent.prompt_tokens is None else sent.prompt_tokens < least
    reading = haystack.read_reply(sent.text, lay, prose)
    found = [
        Fact(key=f.key, value=f.value, found=reading.found[f.key], in_reply=reading.anywhere[f.key])
        for f in lay.facts
    ]
    ttft_ms = sent.ttft_s * 1000 if sent.ttft_s is not None else None
    prefill = sent.prompt_tokens / sent.ttft_s if sent.prompt_tokens and sent.ttft_s else None
    return NeedleProbe(
        context=ctx,
        depth=depth,
        cache=cache,
        salt=salt,
        facts=found,
        decoys=[Decoy(key=d.key, value=d.value) for d in lay.decoys],
        faults=reading.faults,
        passed=sent.error is None
        and not truncated
        and all(f.found for f in found)
        and not reading.faults,
        prompt_tokens=sent.prompt_tokens,
        prompt_tokens_source=sent.usage_from,
        message_tokens=message_tokens,
        expected_prompt_tokens=least,
        truncated=truncated,
        ttft_ms=ttft_ms,
        prefill_tok_s=prefill,
        reply=sent.text,
        finish_reason=sent.finish_reason,
        error=sent.error,
    )


def quality_points(result: NeedleResult, evidence: str) -> list[PerfPoint]:
    """One point per context length over its cold probes whose prompt the server kept whole:
    passes, longest prompt, median TTFT."""
    c = result.conditions
    points = []
    for ctx in sorted({p.context for p in result.probes}):
        cold = [
            p for p in result.probes if p.context == ctx and p.cache == "cold" and not p.truncated
        ]
        if not cold:
            continue
        ttfts = [p.ttft_ms for p in cold if p.ttft_ms is not None]
        rates = [p.prefill_tok_s for p in cold if p.prefill_tok_s is not None]
        longest = max((p.prompt_tokens for p in cold if p.prompt_tokens), default=None)
        passed = sum(p.passed for p in cold)
        measure = QualityMeasure(
            test="needle",
            suite="rigbook needle",
            suite_version=haystack.HAYSTACK_VERSION,
            n=len(cold),
            passed=passed,
            depths=sorted({p.depth for p in cold}),
            facts=c.facts,
            prompt_tokens=longest,
            cache="cold",
            evidence=evidence,
        )
        points.append(
            PerfPoint(
                context_len=ctx,
                concurrency=1,
                claimed_by="rigbook needle",
                ttft_ms=statistics.median(ttfts) if ttfts else None,
                prefill_tok_s=statistics.median(rates) if rates else None,
                notes=f"rigbook needle: {passed}/{len(cold)} cold probes retrieved all {c.facts} "
                f"facts at prompts up to {longest} tokens; median TTFT and prefill rate",
                quality=measure,
            )
        )
    return points


async def _resolve_contexts(
    client, spec: NeedleSpec, model: str
) -> tuple[list[int], int | None, str | None]:
    found = await served_context(client, spec.url, model)
    served, source = (
        found if found else (spec.recipe_context, "recipe" if spec.recipe_context else None)
    )
    if None in spec.contexts and served is None:
        raise EndpointError(
            "E_CONTEXT",
            "--context max: the server does not say its context length",
            "Give --context N, or --recipe with the recipe the server runs.",
        )
    # With nothing served, every context was given (checked above): the filter drops none.
    contexts = (
        [c for c in spec.contexts if c is not None]
        if served is None
        else [served if c is None else c for c in spec.contexts]
    )
    for ctx in contexts:
        if ctx <= TEMPLATE_RESERVE + spec.reply_cap() + 64:
            raise InputError(
                "E_INPUT",
                f"--context {ctx} leaves no room for a haystack",
                f"Use at least {TEMPLATE_RESERVE + spec.reply_cap() + 256}.",
            )
        if served is not None and ctx > served:
            raise _context_error(ctx, served, f"it serves {served} tokens ({source})")
    return contexts, served, source


async def run_needle(
    spec: NeedleSpec, info: RunInfo, progress: Callable[[NeedleProbe], None]
) -> NeedleResult:
    """Run every probe, saving the result after each; returns the finished result."""
    async with httpx.AsyncClient() as client:
        served = await identify(spec.url, spec.model)
        contexts, served_ctx, ctx_source = await _resolve_contexts(client, spec, served.model)
        sizer = _Sizer(client, spec, served.model)
        await sizer.calibrate()
        sampling = Sampling(seed=spec.seed, max_tokens=spec.reply_cap())
        result = NeedleResult(
            conditions=NeedleConditions(
                endpoint=Endpoint(**served.model_dump(), recipe=spec.recipe),
                served_context=served_ctx,
                served_context_source=ctx_source,
                contexts=contexts,
                depths=spec.depths,
                facts=spec.facts,
                seed=spec.seed,
                haystack=haystack.HAYSTACK_VERSION,
                token_count_source=sizer.source,
                sampling=sampling,
                run=info,
            )
        )
        save(result, spec.out)
        for ctx in contexts:
            await _run_context(client, spec, result, ctx, sizer, progress)
        result.complete = True
        save(result, spec.out)
        _refuse_truncated(result, spec.out)
        return result


def _refuse_truncated(result: NeedleResult, out: Path) -> None:
    """E_PROMPT_TRUNCATED naming each context whose prompt the server cut."""
    cut = [p for p in result.probes if p.truncated]
    if not cut:
        return
    lines = [
        f"context {p.context} depth {p.depth:g}: the server counted {p.prompt_tokens} prompt "
        f"tokens, at least {p.expected_prompt_tokens} were sent"
        for p in cut
    ]
    raise EndpointError(
        "E_PROMPT_TRUNCATED",
        f"the server cut the prompt at context {', '.join(str(c) for c in sorted({p.context for p in cut}))} "
        f"(it counted {max(p.prompt_tokens or 0 for p in cut)} tokens at most): those probes say "
        f"nothing about retrieval; result: {out}",
        details=lines,
    )


async def _run_context(
    client, spec: NeedleSpec, result: NeedleResult, ctx: int, sizer: _Sizer, progress
) -> None:
    target = ctx - TEMPLATE_RESERVE - spec.reply_cap()
    sentences = haystack.filler(spec.seed + ctx, int(target / sizer.per_sentence) + 50)
    for depth in spec.depths:
        rng = random.Random(f"{spec.seed}:{ctx}:{depth}")
        lay = haystack.layout(rng, spec.facts, depth)
        salt = haystack.new_salt()

        def message(n: int, salt=salt, lay=lay) -> str:
            return haystack.prompt(salt, sentences[:n], lay)

        n, tokens = await sizer.fit(message, target)
        least = sizer.least_count(n + len(lay.facts) + len(lay.decoys), tokens)
        payload = body(result.conditions.endpoint.model, message(n), result.conditions.sampling)
        counted = None
        for cache in ("cold", "warm") if spec.warm else ("cold",):
            sent = await ask(client, spec.url, payload, spec.stall_s)
            if sent.prompt_tokens is None:
                # No usage in the stream (llama-cpp-python), or no stream at all: the request sent
                # unstreamed counts the prompt, or says why the server refuses it.
                counted = counted or await count_prompt(client, spec.url, payload, spec.stall_s)
                sent.prompt_tokens, sent.usage_from = counted.prompt_tokens, counted.usage_from
            for said in (sent, counted):
                if said and said.status == 400 and "context" in (said.error or "").lower():
                    raise _context_error(ctx, result.conditions.served_context, said.error or "")
            probe = _probe(ctx, depth, cache, lay, sentences[:n], sent, tokens, least, salt)
            result.probes.append(probe)
            result.conditions.run.machine.load_end = machine_now().load_start
            result.conditions.run.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
            result.quality_points = quality_points(result, f"rigbook needle result {spec.out.name}")
            save(result, spec.out)
            progress(probe)
            if probe.truncated:
                # Every deeper probe of this context would be cut the same way.
                return
