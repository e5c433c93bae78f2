"""The request body the bench sends: the profile's sampling, reply length and thinking switch.

The streaming itself is rigbook.bench.client, the hot path.
"""

from __future__ import annotations

from rigbook.bench.profiles import Profile


def chat_payload(profile: Profile, model: str, prompt: str, max_tokens: int) -> dict:
    """The request body: the profile's sampling, reply length held, thinking as the engines spell it."""
    body: dict = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": profile.temperature,
        "top_p": profile.top_p,
        "stream": True,
        # vLLM/SGLang send usage on every chunk with continuous_usage_stats; others ignore it.
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        # Qwen3/DeepSeek templates read enable_thinking, GLM/Kimi read thinking.
        "chat_template_kwargs": {"enable_thinking": profile.thinking, "thinking": profile.thinking},
    }
    if profile.hold_length:
        body["ignore_eos"] = True
        body["min_tokens"] = max_tokens
    return body
