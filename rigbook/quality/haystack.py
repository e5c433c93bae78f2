"""The needle haystack (layout version 1): seeded prose, salted facts, the question.

The prose is made here from sentence templates and word lists at a seed, so it is nobody's
text, costs no download and is the same for the same seed. The facts are salted: vault names
and codes drawn at random, so no model can know them from training. Every prompt opens with
its own random salt line, so no earlier request shares its prefix (a cold prefill).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

HAYSTACK_VERSION = "needle haystack v1"

_TEMPLATES = (
    "The {noun} near the {place} was {adj} in {month}, and the {people} {verb} it every {time}.",
    "In {month} the {people} of the {place} {verb} a {adj} {noun} before the {time} was over.",
    "Nobody in the {place} remembered why the {noun} had turned {adj}, "
    "though the {people} {verb} it.",
    "A {adj} {noun} stood by the {place}; the {people} {verb} it through the {time}.",
    "Every {time} the {people} walked to the {place} to see whether the {noun} was still {adj}.",
    "The {people} wrote that the {place} felt {adj} in {month}, when the {noun} {verb} the road.",
)
_WORDS = {
    "noun": (
        "lantern",
        "orchard",
        "bridge",
        "ledger",
        "kettle",
        "mill",
        "ferry",
        "hedge",
        "clock",
        "barn",
        "well",
        "chapel",
        "quarry",
        "garden",
        "harbour",
        "archive",
    ),
    "place": (
        "valley",
        "harbour",
        "market",
        "hill road",
        "river bend",
        "old quarter",
        "square",
        "northern field",
        "lighthouse",
        "station",
    ),
    "adj": (
        "quiet",
        "crowded",
        "weathered",
        "golden",
        "damp",
        "bright",
        "half-finished",
        "narrow",
        "familiar",
        "restless",
    ),
    "month": ("March", "April", "June", "August", "October", "November", "January"),
    "people": (
        "fishermen",
        "weavers",
        "clerks",
        "children",
        "farmers",
        "carpenters",
        "travellers",
        "bakers",
        "neighbours",
    ),
    "verb": (
        "repaired",
        "painted",
        "measured",
        "guarded",
        "admired",
        "crossed",
        "ignored",
        "described",
    ),
    "time": ("morning", "evening", "winter", "harvest", "week", "season", "holiday"),
}
_INTRO = (
    "Below is a long passage. Hidden somewhere in it are access codes for vaults. "
    "Read it all, then answer the question at the end."
)


@dataclass(frozen=True)
class SaltedFact:
    key: str
    value: str

    def sentence(self) -> str:
        """The fact as it is hidden in the prose."""
        return f"The access code for vault {self.key} is {self.value}."


def filler(seed: int, count: int) -> list[str]:
    """``count`` prose sentences at ``seed``."""
    rng = random.Random(seed)
    return [
        rng.choice(_TEMPLATES).format(**{k: rng.choice(v) for k, v in _WORDS.items()})
        for _ in range(count)
    ]


def salted_facts(rng: random.Random, count: int) -> list[SaltedFact]:
    """``count`` facts with random keys (``QZRM-4821``) and random 7-digit codes, all distinct."""
    letters = "ABCDEFGHJKLMNPQRSTUVWXYZ"
    facts: list[SaltedFact] = []
    while len(facts) < count:
        key = "".join(rng.choice(letters) for _ in range(4)) + f"-{rng.randrange(1000, 10000)}"
        value = str(rng.randrange(1_000_000, 10_000_000))
        if all(f.key != key and f.value != value for f in facts):
            facts.append(SaltedFact(key, value))
    return facts


def question(facts: list[SaltedFact]) -> str:
    """The question at the end of the prompt, naming every vault."""
    keys = " and ".join(f"vault {f.key}" for f in facts)
    return (
        f"Question: what are the access codes for {keys}? Reply with the codes only, one per line."
    )


def prompt(salt: str, sentences: list[str], facts: list[SaltedFact], depth: float) -> str:
    """The user message: salt line, intro, prose with the facts at ``depth`` (0 start, 1 end),
    the question."""
    at = round(depth * len(sentences))
    body = sentences[:at] + [f.sentence() for f in facts] + sentences[at:]
    return f"Record {salt}.\n{_INTRO}\n\n" + " ".join(body) + "\n\n" + question(facts)


def found_in(value: str, reply: str) -> bool:
    """Exact match: the code appears in the reply as a whole number."""
    return re.search(rf"(?<!\d){re.escape(value)}(?!\d)", reply) is not None
