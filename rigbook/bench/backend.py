"""The request bodies the bench sends: the profile's sampling, reply length and thinking switch,
as :func:`rigbook.openai.body.chat_body` spells them.

The streaming itself is rigbook.bench.client, the hot path.
"""

from __future__ import annotations

import copy
import secrets

from rigbook.bench.profiles import Profile
from rigbook.openai.body import chat_body, encode, with_prefix


def chat_payload(profile: Profile, model: str, prompt: str, max_tokens: int) -> dict:
    """The request body: the profile's sampling, reply length held, thinking as the engines spell it."""
    return chat_body(
        model,
        prompt,
        max_tokens=max_tokens,
        temperature=profile.temperature,
        top_p=profile.top_p,
        stream=True,
        continuous_usage=True,
        thinking=profile.thinking,
        hold_length=profile.hold_length,
    )


class RequestBodies:
    """The encoded bodies of one run's requests: one per prompt, or, when the profile asks for
    unique prompts, a fresh one per request whose prompt starts with a tag no other request has."""

    def __init__(self, profile: Profile, model: str, prompts: list[str], max_tokens: int) -> None:
        self._payloads = [chat_payload(profile, model, prompt, max_tokens) for prompt in prompts]
        # Encoded once when fixed: the hot path then only copies bytes.
        self._fixed = None if profile.unique_prompts else [encode(p) for p in self._payloads]
        self._tag = secrets.token_hex(4)
        self._made = 0

    def __len__(self) -> int:
        return len(self._payloads)

    def for_worker(self, worker: int) -> RequestBodies:
        """A copy for worker process ``worker``: its unique prompts carry a tag of their own, so
        no two processes make the same one."""
        other = copy.copy(self)
        other._tag, other._made = f"{self._tag}w{worker}", 0
        return other

    def body(self, i: int) -> bytes:
        """The body of request ``i`` (prompt ``i mod prompts``)."""
        if self._fixed is not None:
            return self._fixed[i % len(self._fixed)]
        self._made += 1
        payload = self._payloads[i % len(self._payloads)]
        return encode(with_prefix(payload, f"Request {self._tag}-{self._made}. "))
