"""Users holding sessions: the multi-turn and shared-prefix workloads' requests.

A cell at concurrency C runs C users at once. Each sends the workload's ``turns`` messages one
after the other, ``think_time_s`` apart; a multi-turn request carries the whole conversation so
far, the engine's own earlier replies included (so the client keeps each reply's text), and a
shared-prefix request starts with the reference document of its user's group. Every text that
should be new to the engine starts with a random tag of its cell and user (or group), so a
session's first turn shares nothing with what was sent before but the chat template's opening,
and each cell starts cold.

Sessions stream through the Python client: the compiled reader keeps no reply text.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable

from rigbook.bench.backend import chat_payload
from rigbook.bench.clients import LoopClient
from rigbook.bench.profiles import Profile
from rigbook.bench.result import RequestRecord
from rigbook.bench.scheduler import until_done_or_stopped
from rigbook.bench.workloads.model import Workload, workload_texts
from rigbook.openai.body import Message, encode, with_messages
from rigbook.openai.body import message as chat_message
from rigbook.openai.stream import RawRequest


class TurnRequest(RawRequest):
    """A session's request: what :class:`RawRequest` keeps, its reply's text included, plus who
    sent it."""

    __slots__ = ("turn", "user")

    def __init__(self, user: int, turn: int) -> None:
        super().__init__()
        self.user, self.turn = user, turn
        self.text = []  # the fold keeps the reply's content in it

    def cached_tokens(self) -> int | None:
        """Prompt tokens the engine served from its cache, as its response said, or None."""
        usage = self.final_usage or {}
        details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        if isinstance(cached, int) and not isinstance(cached, bool) and cached >= 0:
            return cached
        return self.cache_n


class Sessions:
    """One run's sessions: the messages each user sends, and the cells that send them."""

    # Tokens of a chat template's opening (e.g. "<|im_start|>system\n") that every prompt shares
    # before its own tag: the most a cold turn may be served from cache.
    COLD_HEAD_TOKENS = 8

    def __init__(self, workload: Workload, profile: Profile, model: str, max_tokens: int) -> None:
        assert workload.sessions and workload.text_set, "sessions need a session workload"
        self.workload = workload
        self.texts = workload_texts(workload.text_set)
        self._template = chat_payload(profile, model, "", max_tokens)
        self._tags: dict[tuple[int, str, int], str] = {}
        words = " ".join(self.texts["document"]).split()
        self._document = " ".join(words[i % len(words)] for i in range(workload.prefix_words))

    def _tag(self, cell: int, kind: str, number: int) -> str:
        """A random tag for a cell's user or group, random from its first character: two tags
        share an opening only by chance, a character or so (a run-wide part first would share
        several tokens an engine could serve from cache)."""
        return self._tags.setdefault((cell, kind, number), secrets.token_hex(6))

    def system(self, cell: int, user: int) -> str:
        """The system message: the session's tag, and the document of the user's group."""
        w = self.workload
        if not w.prefix_words:
            return f"{self._tag(cell, 'user', user)}. You are a helpful assistant; answer in full prose."
        tag = (
            self._tag(cell, "group", user % w.prefix_groups)
            if w.prefix_groups
            else self._tag(cell, "user", user)
        )
        return f"{tag}. Answer questions about this document.\n\n{self._document}"

    def message(self, user: int, turn: int) -> str:
        """The user's message of turn ``turn`` (0 first)."""
        if self.workload.kind == "multi-turn":
            if turn == 0:
                openers = self.texts["openers"]
                return openers[user % len(openers)]
            follow = self.texts["follow_ups"]
            return follow[(user + turn - 1) % len(follow)]
        questions = self.texts["questions"]
        # The user and turn first: no two questions of a cell share more than the document.
        return f"({user}.{turn}) {questions[(user * self.workload.turns + turn) % len(questions)]}"

    def cold(self, turn: int) -> bool:
        """Whether a request of this turn shares nothing with anything sent before it but the
        chat template's opening: a session's first turn, where its system message starts with
        a tag of its own."""
        w = self.workload
        return turn == 0 and (w.prefix_words == 0 or w.prefix_groups == 0)

    def body(self, messages: list[Message]) -> bytes:
        return encode(with_messages(self._template, messages))

    async def run_cell(
        self,
        client: LoopClient,
        on_done: Callable[[int, RawRequest], None],
        *,
        cell: int,
        users: int,
        stop: asyncio.Event,
    ) -> None:
        """Every user's session, ``users`` at once; a user whose request failed stops there (the
        conversation has no reply to go on with). Setting ``stop`` ends them all."""
        w = self.workload
        counter = iter(range(10**9))

        async def session(user: int) -> None:
            messages = [chat_message("system", self.system(cell, user))]
            for turn in range(w.turns):
                if turn and w.think_time_s:
                    await asyncio.sleep(w.think_time_s)
                if stop.is_set():
                    return
                asked = chat_message("user", self.message(user, turn))
                sent = [*messages, asked] if w.kind == "multi-turn" else [messages[0], asked]
                raw = TurnRequest(user, turn)
                i = next(counter)
                await client.send(self.body(sent), raw)
                on_done(i, raw)
                if raw.error is not None:
                    return
                if w.kind == "multi-turn":
                    messages = [*sent, chat_message("assistant", "".join(raw.text or ()))]

        await until_done_or_stopped([asyncio.create_task(session(u)) for u in range(users)], stop)

    @staticmethod
    def annotate(record: RequestRecord, raw: RawRequest) -> RequestRecord:
        """The record with its user, turn (1 first) and the engine's cached prompt tokens."""
        if not isinstance(raw, TurnRequest):
            return record
        return record.model_copy(
            update={
                "user": raw.user,
                "turn": raw.turn + 1,
                "cached_prompt_tokens": raw.cached_tokens(),
            }
        )
