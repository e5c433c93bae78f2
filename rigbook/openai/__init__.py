"""The OpenAI-compatible protocol, the one place rigbook speaks it: the base URL and request paths
(:mod:`~rigbook.openai.urls`), discovery and the model a run asks for
(:mod:`~rigbook.openai.models`), the chat request body (:mod:`~rigbook.openai.body`), the fold of
a streamed reply's events (:mod:`~rigbook.openai.stream`) and the smoke test
(:mod:`~rigbook.openai.smoke`). Bench, capacity, the quality commands and ``up`` all use it.
"""

from rigbook.openai.body import chat_body
from rigbook.openai.models import ServerInfo, discover, pick_model
from rigbook.openai.smoke import SmokeResult, smoke
from rigbook.openai.urls import base_url, v1_url

__all__ = [
    "ServerInfo",
    "SmokeResult",
    "base_url",
    "chat_body",
    "discover",
    "pick_model",
    "smoke",
    "v1_url",
]
