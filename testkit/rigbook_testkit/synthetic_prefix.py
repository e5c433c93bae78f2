"""The synthetic server's prefix cache: it knows exactly which token sequences it has seen.

A prompt's tokens are the words of its messages' contents, in order (what the server counts as
prompt tokens). The cache holds every prefix of every prompt it took in (from the moment it took
it in, as an engine that starts prefilling) and of every finished request's prompt followed by its
reply (as an engine keeps the generated tokens' KV): a request is served from cache for the
longest prefix of its prompt the cache holds. There is no eviction, so the truth a test checks is
plain arithmetic over what was sent. Each server process keeps its own.
"""

from __future__ import annotations

from collections.abc import Sequence


class PrefixCache:
    """Every prefix seen, by a chained hash of its tokens; and the counters vLLM keeps."""

    def __init__(self) -> None:
        self._seen: set[int] = set()
        self.queries = 0  # prompt tokens looked up (vllm:prefix_cache_queries)
        self.hits = 0  # of those, found (vllm:prefix_cache_hits)

    def _add(self, tokens: Sequence[str]) -> None:
        h = 0
        for token in tokens:
            h = hash((h, token))
            self._seen.add(h)

    def take(self, tokens: Sequence[str]) -> int:
        """Look ``tokens`` up and keep them: how many leading tokens were cached already."""
        h, cached = 0, 0
        for token in tokens:
            h = hash((h, token))
            if h not in self._seen:
                break
            cached += 1
        self._add(tokens)
        self.queries += len(tokens)
        self.hits += cached
        return cached

    def keep(self, tokens: Sequence[str]) -> None:
        """Keep a finished request's prompt and reply."""
        self._add(tokens)

    def render(self) -> bytes:
        """The counters as vLLM exposes them in /metrics."""
        lines = []
        for name, value in (
            ("vllm:prefix_cache_queries", self.queries),
            ("vllm:prefix_cache_hits", self.hits),
        ):
            lines += [
                f"# TYPE {name}_total counter",
                f'{name}_total{{model_name="synthetic"}} {value:.1f}',
            ]
        return ("\n".join(lines) + "\n").encode()
