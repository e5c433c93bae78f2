"""What the synthetic server counts and records: its Prometheus counters (shared by every process
of one server) and each request as it was served, the truth the bench client is checked against.
Apart from :mod:`rigbook_testkit.synthetic_server` so that its pacer
(:mod:`rigbook_testkit.synthetic_pacer`) can count and record without importing the server."""

from __future__ import annotations

import multiprocessing
from array import array
from dataclasses import dataclass, field

# Prometheus names of the counters, as each engine spells them (llama-server has no TTFT histogram).
FLAVORS = {
    "vllm": (
        "vllm:generation_tokens_total",
        "vllm:prompt_tokens_total",
        "vllm:time_to_first_token_seconds",
    ),
    "sglang": (
        "sglang:generation_tokens_total",
        "sglang:prompt_tokens_total",
        "sglang:time_to_first_token_seconds",
    ),
    "llamacpp": (
        "llamacpp:tokens_predicted_total",
        "llamacpp:prompt_tokens_total",
        None,
    ),
}
TTFT_BUCKETS_S = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    10.0,
)


class Counters:
    """What /metrics and /_sent report, in shared memory so that every process of one server adds
    to it: [generation tokens, prompt tokens, TTFT count, TTFT sum, bucket counts..., writes]."""

    def __init__(self, shared=None) -> None:
        self.values = (
            shared if shared is not None else multiprocessing.Array("d", 5 + len(TTFT_BUCKETS_S))
        )

    def add_tokens(self, n: int, writes: int = 1) -> None:
        """Count ``writes`` writes to streams that carried ``n`` tokens in all."""
        with self.values.get_lock():
            self.values[0] += n
            self.values[-1] += writes

    def sent(self) -> dict[str, float]:
        """Tokens and stream writes so far, over every process of the server."""
        with self.values.get_lock():
            return {"tokens": self.values[0], "writes": self.values[-1]}

    def add_request(self, prompt_tokens: int, ttft_s: float) -> None:
        with self.values.get_lock():
            v = self.values
            v[1] += prompt_tokens
            v[2] += 1
            v[3] += ttft_s
            for i, le in enumerate(TTFT_BUCKETS_S):
                if ttft_s <= le:
                    v[4 + i] += 1

    def render(self, flavor: str, model: str = "synthetic") -> bytes:
        """The Prometheus text exposition of the counters."""
        gen, prompt, ttft = FLAVORS[flavor]
        with self.values.get_lock():
            v = self.values[:]
        label = f'{{model_name="{model}"}}' if flavor != "llamacpp" else ""
        lines = [
            f"# TYPE {gen} counter",
            f"{gen}{label} {v[0]:.1f}",
            f"# TYPE {prompt} counter",
            f"{prompt}{label} {v[1]:.1f}",
        ]
        if ttft:
            lines.append(f"# TYPE {ttft} histogram")
            inner = f',model_name="{model}"' if label else ""
            for i, le in enumerate(TTFT_BUCKETS_S):
                lines.append(f'{ttft}_bucket{{le="{le}"{inner}}} {v[4 + i]:.1f}')
            lines += [
                f'{ttft}_bucket{{le="+Inf"{inner}}} {v[2]:.1f}',
                f"{ttft}_count{label} {v[2]:.1f}",
                f"{ttft}_sum{label} {v[3]}",
            ]
        return ("\n".join(lines) + "\n").encode()


@dataclass
class Served:
    """One request as the server handled it; times on ``time.perf_counter``.

    ``received`` is when the kernel received the request's first bytes
    (:mod:`rigbook_testkit.synthetic_accept`), ``arrival`` when the server had read the whole
    request. Between the two it waits on whatever else the server's loop is doing: a client sees
    that wait in its TTFT; an engine's own TTFT histogram, which starts as the engine gets the
    request (and this server's ``/metrics``, which starts at ``arrival``), does not."""

    seq: int
    model: str
    received: float
    arrival: float
    prompt_tokens: int
    times: array = field(default_factory=lambda: array("d"))  # when each chunk went out
    counts: array = field(default_factory=lambda: array("l"))  # tokens each chunk carried
    fault: str | None = None
    completed: bool = False
    cached_tokens: int | None = None  # prompt tokens its prefix cache held (--prefix-cache)

    def to_dict(self) -> dict:
        tokens = sum(self.counts)
        first, last = (self.times[0], self.times[-1]) if self.times else (None, None)
        after = tokens - (self.counts[0] if self.counts else 0)
        decode = (
            after / (last - first)
            if first is not None and last is not None and last > first
            else None
        )
        return {
            "seq": self.seq,
            "model": self.model,
            "received": self.received,
            "arrival": self.arrival,
            "first_send": first,
            "last_send": last,
            "tokens": tokens,
            "chunks": len(self.times),
            "ttft_s": (first - self.arrival) if first else None,
            # the truth for a client's TTFT: the server's wait before it read the request included
            "ttft_received_s": (first - self.received) if first else None,
            "decode_tok_s": decode,
            "fault": self.fault,
            "completed": self.completed,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
        }
