"""SLO text: what parses, what is refused with E_SLO_INVALID, and the beyond-doubt rule."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rigbook.bench.result import Distribution, RequestRecord
from rigbook.capacity.slo import broken_beyond_doubt, parse_slo, read_term
from rigbook.errors import InputError


def test_canonical_text_orders_terms_and_adds_the_error_term():
    slo = parse_slo(" ttft_p99_ms <= 2000.0, per_user_tok_s_p50>=20 ")
    assert slo.text == "per_user_tok_s>=20,ttft_p99_ms<=2000,error_rate<=0"
    assert parse_slo("per_user_tok_s>=20,ttft_p99_ms<=2000").text == slo.text
    assert parse_slo("per_user_tok_s_p10>=5,error_rate<=1%").term("error_rate").threshold == 0.01


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "empty"),
        ("tok_s>=20", "unknown SLO term"),
        ("per_user_tok_s<=20", "better higher"),
        ("ttft_p99_ms>=2000", "better lower"),
        ("per_user_tok_s>20", "includes its threshold"),
        ("per_user_tok_s>=fast", "cannot read"),
        ("per_user_tok_s>=20,per_user_tok_s>=30", "twice"),
        ("error_rate<=0.01", "no speed or latency"),
        ("error_rate<=150%", "out of range"),
        ("ttft_p99_ms<=5%", "is in ms, not %"),
    ],
)
def test_bad_slo_is_refused_with_a_code(text, says):
    with pytest.raises(InputError) as err:
        parse_slo(text)
    assert err.value.code == "E_SLO_INVALID" and says in err.value.message
    assert "per_user_tok_s>=20" in err.value.remedy


def test_phrases_read_as_a_person_writes_them():
    slo = parse_slo("per_user_tok_s>=20,ttft_p99_ms<=2000,itl_p99_ms<=80")
    assert [t.phrase() for t in slo.terms] == [
        "≥ 20 tok/s each",
        "TTFT p99 ≤ 2 s",
        "ITL p99 ≤ 80 ms",
        "no failed request",
    ]


@pytest.mark.parametrize(
    "text, canonical, phrases",
    [
        (
            "ttft_p90_ms<=2.5s,per_user_tok_s>=7.5,error_rate<=0.5%",
            "per_user_tok_s>=7.5,ttft_p90_ms<=2500,error_rate<=0.005",
            ["≥ 7.5 tok/s each", "TTFT p90 ≤ 2.5 s", "error rate ≤ 0.5%"],
        ),
        # Binary floats give 0.7 / 100 = 0.006999999999999999 and 0.007 * 100 = 0.7000000000000001:
        # a decimal written by a person must read back as itself.
        (
            "per_user_tok_s>=7.5tok/s,ttft_p99_ms<=2.3s,error_rate<=0.7%",
            "per_user_tok_s>=7.5,ttft_p99_ms<=2300,error_rate<=0.007",
            ["≥ 7.5 tok/s each", "TTFT p99 ≤ 2.3 s", "error rate ≤ 0.7%"],
        ),
        (
            "per_user_tok_s_p10>=0.3,ttft_p50_ms<=0.35s,itl_p99_ms<=12.5ms,error_rate<=1.1%",
            "per_user_tok_s_p10>=0.3,ttft_p50_ms<=350,itl_p99_ms<=12.5,error_rate<=0.011",
            [
                "≥ 0.3 tok/s for 9 in 10 requests",
                "TTFT p50 ≤ 350 ms",
                "ITL p99 ≤ 12.5 ms",
                "error rate ≤ 1.1%",
            ],
        ),
        (
            "ttft_p99_ms<=4.35S , per_user_tok_s>=2.5e1, error_rate<=0.007",
            "per_user_tok_s>=25,ttft_p99_ms<=4350,error_rate<=0.007",
            ["≥ 25 tok/s each", "TTFT p99 ≤ 4.35 s", "error rate ≤ 0.7%"],
        ),
    ],
)
def test_thresholds_with_decimals_and_units_read_back_exactly(text, canonical, phrases):
    slo = parse_slo(text)
    assert slo.text == canonical
    assert [t.phrase() for t in slo.terms] == phrases
    # The canonical text is a fixed point: it parses to itself.
    assert parse_slo(slo.text).text == canonical


@pytest.mark.parametrize("seconds", ["0.1", "0.3", "1.1", "2.3", "4.35", "0.07", "12.34"])
def test_a_time_in_seconds_is_the_same_slo_as_in_ms(seconds):
    ms = str(Decimal(seconds) * 1000).rstrip("0").rstrip(".")
    assert (
        parse_slo(f"per_user_tok_s>=1,ttft_p99_ms<={seconds}s").text
        == parse_slo(f"per_user_tok_s>=1,ttft_p99_ms<={ms}").text
    )


@pytest.mark.parametrize("pct", ["0.1", "0.3", "0.7", "1.1", "2.5", "7", "33.3"])
def test_a_percentage_is_the_same_slo_as_its_fraction(pct):
    fraction = str(Decimal(pct) / 100)
    a = parse_slo(f"per_user_tok_s>=1,error_rate<={pct}%")
    assert a.text == parse_slo(f"per_user_tok_s>=1,error_rate<={fraction}").text
    assert a.term("error_rate").phrase() == f"error rate ≤ {pct}%"


@pytest.mark.parametrize(
    "text", ["per_user_tok_s>=1e", "per_user_tok_s>=1.2.3", "ttft_p99_ms<=+-2s"]
)
def test_a_malformed_number_is_refused(text):
    with pytest.raises(InputError) as err:
        parse_slo(text)
    assert err.value.code == "E_SLO_INVALID" and "is not a number" in err.value.message


def _rec(i: int, ttft_ms: float | None, rate: float | None, ok: bool = True) -> RequestRecord:
    first = None if ttft_ms is None else ttft_ms / 1000.0
    return RequestRecord(
        cell=0,
        index=i,
        prompt_index=0,
        sent_s=0.0,
        first_token_s=first,
        token_source="server_continuous",
        ok=ok,
        decode_tok_s=rate,
        itl_ms=Distribution(),
    )


values = st.lists(st.floats(min_value=1, max_value=5000, allow_nan=False), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(
    seen=values,
    rest=values,
    term=st.sampled_from(
        [
            "ttft_p99_ms<=1000",
            "ttft_p50_ms<=1000",
            "ttft_p90_ms<=1000",
            "per_user_tok_s>=1000",
            "per_user_tok_s_p10>=1000",
        ]
    ),
)
def test_broken_beyond_doubt_means_no_rest_can_save_it(seen, rest, term):
    """Whenever the rule says a term is broken, the finished probe fails it, whatever came after."""
    t = parse_slo(term).terms[0]
    ttft = t.name.startswith("ttft")
    recs = [_rec(i, v if ttft else 10, None if ttft else v) for i, v in enumerate(seen)]
    planned = len(seen) + len(rest)
    best = 0.0 if ttft else 1e9  # the rest at their best
    if broken_beyond_doubt(t, recs, planned):
        tail = [
            _rec(len(seen) + i, best if ttft else 10, None if ttft else best)
            for i in range(len(rest))
        ]
        assert not read_term(t, recs + tail).passed
        # and also for any actual rest
        actual = [
            _rec(len(seen) + i, v if ttft else 10, None if ttft else v) for i, v in enumerate(rest)
        ]
        assert not read_term(t, recs + actual).passed


def test_one_slow_first_token_in_two_hundred_is_not_beyond_doubt_for_p99():
    t = parse_slo("ttft_p99_ms<=1000").terms[0]
    assert not broken_beyond_doubt(t, [_rec(0, 1500, None)], 200)
    three = [_rec(i, 1500, None) for i in range(3)]
    assert broken_beyond_doubt(t, three, 200)
    assert not read_term(t, three + [_rec(3 + i, 10, None) for i in range(197)]).passed


def test_error_rate_breaks_at_the_first_failure_when_none_is_allowed():
    t = parse_slo("per_user_tok_s>=1").term("error_rate")
    assert broken_beyond_doubt(t, [_rec(0, 10, 50, ok=False)], 100)
    loose = parse_slo("per_user_tok_s>=1,error_rate<=5%").term("error_rate")
    assert not broken_beyond_doubt(loose, [_rec(0, 10, 50, ok=False)], 100)
    assert broken_beyond_doubt(loose, [_rec(i, 10, 50, ok=False) for i in range(6)], 100)
