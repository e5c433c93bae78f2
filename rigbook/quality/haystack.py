"""The needle haystack (layout version 2): seeded prose, salted facts, decoys, the question.

The prose is made here from sentence templates and word lists at a seed, so it is nobody's
text, costs no download and is the same for the same seed. The facts are salted: vault names
and codes drawn at random, so no model can know them from training. Decoys are facts of the
same shape about vaults the question does not name: one right before the facts, one right
after, the rest spread through the prose, so a reply that copies the first or last code it
sees, lists every code, or repeats the prompt names a decoy. A fact counts as retrieved only
under its own vault's name. Every prompt opens with its own random salt line, so no earlier
request shares its prefix (a cold prefill).
"""

from __future__ import annotations

import random
import re
import secrets
import string
from dataclasses import dataclass
from typing import Literal

HAYSTACK_VERSION = "needle haystack v2"

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


def _key(rng: random.Random) -> str:
    letters = "ABCDEFGHJKLMNPQRSTUVWXYZ"
    return "".join(rng.choice(letters) for _ in range(4)) + f"-{rng.randrange(1000, 10000)}"


def salted_facts(rng: random.Random, count: int) -> list[SaltedFact]:
    """``count`` facts with random keys (``QZRM-4821``) and random 7-digit codes, all distinct."""
    facts: list[SaltedFact] = []
    while len(facts) < count:
        fact = SaltedFact(_key(rng), str(rng.randrange(1_000_000, 10_000_000)))
        if all(f.key != fact.key and f.value != fact.value for f in facts):
            facts.append(fact)
    return facts


def decoy_count(facts: int) -> int:
    """Decoys per probe: one before the facts, one after, and ``facts + 2`` spread out."""
    return facts + 4


@dataclass(frozen=True)
class Layout:
    """Where a probe's facts and decoys sit: the facts at ``depth`` between ``decoys[0]`` and
    ``decoys[1]``; each further decoy at its own fraction of the prose in ``spread``."""

    facts: list[SaltedFact]
    decoys: list[SaltedFact]
    depth: float
    spread: list[float]

    def sentences(self, prose: list[str]) -> list[str]:
        """The prose with every fact and decoy sentence in place."""
        inserts: list[tuple[float, int, list[str]]] = [
            (frac, 0, [d.sentence()]) for frac, d in zip(self.spread, self.decoys[2:], strict=True)
        ]
        block = [self.decoys[0].sentence(), *(f.sentence() for f in self.facts)]
        inserts.append((self.depth, 1, [*block, self.decoys[1].sentence()]))
        out = list(prose)
        # From the end, so an insert does not move the places of those before it.
        for frac, _, lines in sorted(inserts, key=lambda x: (x[0], x[1]), reverse=True):
            at = round(frac * len(prose))
            out[at:at] = lines
        return out


def layout(rng: random.Random, facts: int, depth: float) -> Layout:
    """Facts, decoys (distinct keys and codes, none equal to a fact's) and decoy places."""
    every = salted_facts(rng, facts + decoy_count(facts))
    spread = [rng.random() for _ in range(decoy_count(facts) - 2)]
    return Layout(facts=every[:facts], decoys=every[facts:], depth=depth, spread=spread)


def question(facts: list[SaltedFact]) -> str:
    """The question at the end of the prompt, naming every vault asked for."""
    keys = " and ".join(f"vault {f.key}" for f in facts)
    return (
        f"Question: what are the access codes for {keys}? Reply with one line per vault, "
        "in the form VAULT: CODE, and nothing else."
    )


def new_salt() -> str:
    """A probe's salt: random, not from the seed (a rerun at the same seed must not find its
    prefix cached), and letters only: a run of digits in it would read as a code, which a reply
    could copy from the first line and be scored as naming no vault's code at all."""
    return "".join(secrets.choice(string.ascii_lowercase) for _ in range(16))


def prompt(salt: str, sentences: list[str], lay: Layout) -> str:
    """The user message: salt line, intro, prose with the facts at their depth (0 start, 1 end)
    and the decoys in their places, the question."""
    body = lay.sentences(sentences)
    return f"Record {salt}.\n{_INTRO}\n\n" + " ".join(body) + "\n\n" + question(lay.facts)


_CODE = re.compile(r"(?<!\d)\d{7}(?!\d)")

Fault = Literal["missed", "unbound", "decoy", "many_codes", "echo"]


@dataclass(frozen=True)
class Reading:
    """What a reply says: the code bound to each asked vault, and why it fails, if it does."""

    found: dict[str, bool]
    anywhere: dict[str, bool]
    faults: list[Fault]


def _mentions(reply: str, key: str) -> list[re.Match[str]]:
    return list(re.finditer(rf"(?<![A-Za-z0-9]){re.escape(key)}(?!\d)", reply, re.IGNORECASE))


def bound_codes(reply: str, key: str, keys: list[str]) -> list[str]:
    """The code given under ``key``: after each mention of it, the first 7-digit number before
    the next mention of any vault in ``keys`` (asked or decoy) or the end of the reply."""
    stops = sorted(m.start() for k in keys for m in _mentions(reply, k))
    codes = []
    for m in _mentions(reply, key):
        end = next((s for s in stops if s >= m.end()), len(reply))
        code = _CODE.search(reply, m.end(), end)
        if code is not None:
            codes.append(code.group(0))
    return codes


def read_reply(reply: str, lay: Layout, prose: list[str]) -> Reading:
    """Judge a reply (docs/quality.md, "Pass or fail"): a fact is found when the reply gives its
    code under its vault's name and under no other code; the reply fails when it names a decoy's
    code, more distinct codes than facts were asked, or repeats the prompt's intro or a sentence
    of its prose or decoys."""
    keys = [f.key for f in lay.facts] + [d.key for d in lay.decoys]
    codes = set(_CODE.findall(reply))
    found, anywhere = {}, {}
    for f in lay.facts:
        given = bound_codes(reply, f.key, keys)
        found[f.key] = bool(given) and set(given) == {f.value}
        anywhere[f.key] = f.value in codes
    faults: list[Fault] = []
    if not all(anywhere.values()):
        faults.append("missed")
    if any(anywhere[k] and not found[k] for k in found):
        faults.append("unbound")
    if any(d.value in codes for d in lay.decoys):
        faults.append("decoy")
    if len(codes) > len(lay.facts):
        faults.append("many_codes")
    if repeats_prompt(reply, lay, prose):
        faults.append("echo")
    return Reading(found=found, anywhere=anywhere, faults=faults)


def repeats_prompt(reply: str, lay: Layout, prose: list[str]) -> bool:
    """The reply holds the intro, a whole sentence of the prose or a decoy's sentence (a fact's
    own sentence is an answer in the prompt's words, not an echo)."""
    if _INTRO.split(". ")[0] in reply:
        return True
    told = {d.sentence() for d in lay.decoys} | set(prose)
    return any(s in reply for s in told)
