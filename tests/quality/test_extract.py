"""The strict extraction rule: only the documented forms give an answer."""

import pytest

from rigbook.quality.extract import extract_letter


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("B", "B"),
        (" B\n", "B"),
        ("(C)", "C"),
        ("D.", "D"),
        ("A)", "A"),
        ("**B**", "B"),
        ("B. 85", "B"),
        ("C) 12", "C"),
        ("\n\nA: the first one", "A"),
        ("I think the answer is (C).", "C"),
        ("Answer: D", "D"),
        ("The answer is B, since 4+4=8.", "B"),
        ("Let me see. The answer is C. Yes, the answer is C.", "C"),
    ],
)
def test_documented_forms_give_the_letter(reply, letter):
    assert extract_letter(reply, 4) == letter


@pytest.mark.parametrize(
    "reply",
    [
        "",  # nothing
        "A lot of people would say B",  # a word starting with A is not the letter A
        "The answer is B or maybe C. The answer is C.",  # two letters named: ambiguous
        "85",  # the option's text, not its letter
        "b",  # lower case
        "E",  # not one of the four options
        "The answer is Because of the table",  # 'B' inside a word
    ],
)
def test_anything_else_is_no_answer(reply):
    assert extract_letter(reply, 4) is None


def test_ten_options_allow_letters_to_j():
    assert extract_letter("J", 10) == "J"
    assert extract_letter("J", 4) is None
