"""How a needle reply is read: a code counts only under its own vault, decoys sit around the
facts, and a reply that names decoys, lists codes or repeats the prompt fails."""

from __future__ import annotations

import random
import re

import pytest

from rigbook.quality import haystack
from rigbook.quality.haystack import Layout, SaltedFact, read_reply

FACTS = [SaltedFact("QZRM-4821", "5190374"), SaltedFact("BKTW-1033", "8812045")]
DECOYS = [SaltedFact(f"DCY{c}-100{i}", f"700000{i}") for i, c in enumerate("ABCDEF")]
LAY = Layout(facts=FACTS, decoys=DECOYS, depth=0.5, spread=[0.1, 0.3, 0.7, 0.9])
PROSE = haystack.filler(1, 40)


@pytest.mark.parametrize(
    "reply",
    [
        "QZRM-4821: 5190374\nBKTW-1033: 8812045",
        "**QZRM-4821**: 5190374\n**BKTW-1033**: 8812045",
        "Vault qzrm-4821 has code 5190374, and vault BKTW-1033 has code 8812045.",
        # The facts in the prompt's own words: an answer, not an echo.
        "The access code for vault QZRM-4821 is 5190374. "
        "The access code for vault BKTW-1033 is 8812045.",
        # The question said again first: a mention with no code binds nothing.
        "The codes for vault QZRM-4821 and vault BKTW-1033 are:\nQZRM-4821: 5190374\n"
        "BKTW-1033: 8812045",
    ],
)
def test_codes_under_their_vaults_pass(reply):
    reading = read_reply(reply, LAY, PROSE)
    assert reading.faults == [] and all(reading.found.values())


@pytest.mark.parametrize(
    ("reply", "faults", "found"),
    [
        ("QZRM-4821: 8812045\nBKTW-1033: 5190374", ["unbound"], [False, False]),
        ("5190374\n8812045", ["unbound"], [False, False]),
        ("QZRM-4821: 5190374", ["missed"], [True, False]),
        ("QZRM-4821: 5190374\nBKTW-1033: 7000001", ["missed", "decoy"], [True, False]),
        # A decoy's code beside the right one.
        (
            "QZRM-4821: 5190374 or 7000003\nBKTW-1033: 8812045",
            ["decoy", "many_codes"],
            [True, True],
        ),
        (
            # One vault given two codes: it is not found.
            "QZRM-4821: 5190374 BKTW-1033: 8812045 QZRM-4821: 1111111",
            ["unbound", "many_codes"],
            [False, True],
        ),
        (f"QZRM-4821: 5190374\nBKTW-1033: 8812045\n{PROSE[3]}", ["echo"], [True, True]),
        (
            "Below is a long passage. QZRM-4821: 5190374\nBKTW-1033: 8812045",
            ["echo"],
            [True, True],
        ),
        (
            f"QZRM-4821: 5190374\nBKTW-1033: 8812045\n{DECOYS[4].sentence()}",
            ["decoy", "many_codes", "echo"],
            [True, True],
        ),
        # "A and B are X and Y": nothing binds X to A.
        (
            "The access codes for vault QZRM-4821 and vault BKTW-1033 are 5190374 and 8812045.",
            ["unbound"],
            [False, False],
        ),
    ],
)
def test_replies_that_fail_say_why(reply, faults, found):
    reading = read_reply(reply, LAY, PROSE)
    assert reading.faults == faults
    assert [reading.found[f.key] for f in FACTS] == found


@pytest.mark.parametrize("depth", [0.0, 0.25, 0.5, 1.0])
@pytest.mark.parametrize("facts", [1, 3])
def test_decoys_come_before_and_after_the_facts(depth, facts):
    lay = haystack.layout(random.Random(f"x:{depth}:{facts}"), facts, depth)
    assert len(lay.decoys) == facts + 4
    every = lay.facts + lay.decoys
    assert len({f.key for f in every}) == len({f.value for f in every}) == len(every)
    message = haystack.prompt("abc", haystack.filler(3, 100), lay)
    codes = re.findall(r"\d{7}", message)
    assert sorted(codes) == sorted(f.value for f in every)
    places = [codes.index(f.value) for f in lay.facts]
    assert codes.index(lay.decoys[0].value) == min(places) - 1
    assert codes.index(lay.decoys[1].value) == max(places) + 1
    # The facts sit at their depth of the prose.
    body = message.split("\n\n")[1]
    assert abs(body.index(lay.facts[0].sentence()) / len(body) - depth) < 0.1


def test_a_salt_has_no_digit_so_the_first_code_a_prompt_shows_is_a_decoy():
    # A hex salt such as "ef3453431b029044" held a 7-digit run: a reply copying the first code
    # it saw copied the salt, and was scored as missing the fact rather than naming a decoy.
    salts = {haystack.new_salt() for _ in range(500)}
    assert len(salts) == 500 and not any(re.search(r"\d", s) for s in salts)
    lay = haystack.layout(random.Random(3), 2, 0.5)
    text = haystack.prompt(haystack.new_salt(), ["Some prose."] * 20, lay)
    first = re.search(r"(?<!\d)\d{7}(?!\d)", text)
    assert first is not None and first.group() in {d.value for d in lay.decoys}
