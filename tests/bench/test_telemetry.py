"""Telemetry through the same sampler code as live NVML, replayed from the H200 energy fixture."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

from rigbook.bench.metrics import build_cell
from rigbook.bench.result import RequestRecord
from rigbook.bench.telemetry import Sampler, open_reader, throttle_names
from rigbook_testkit.telemetry_replay import ReplayReader

FIXTURE = Path(__file__).parent.parent / "fixtures" / "rigs" / "h200-1gpu-vm.energy-under-load.json"


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _replay_cell(reader=lambda clock: ReplayReader.from_fixture(FIXTURE, clock=clock)):
    """One cell over the fixture's load window, sampled at each recorded moment."""
    data = json.loads(FIXTURE.read_text())
    lo, hi = data["load_window"]
    clock = Clock(data["samples"][0]["t"])
    sampler = Sampler(reader(clock))
    clock.t = lo
    sampler.begin()
    for s in data["samples"]:
        if lo < s["t"] < hi:
            clock.t = s["t"]
            sampler.sample_once()
    clock.t = hi
    return data, sampler, sampler.end()


def _counter_at(samples, t):
    for a, b in itertools.pairwise(samples):
        if a["t"] <= t <= b["t"]:
            return a["energy_mj"] + (b["energy_mj"] - a["energy_mj"]) * (t - a["t"]) / (
                b["t"] - a["t"]
            )
    raise AssertionError(t)


def test_energy_is_the_counter_difference_across_the_window():
    data, sampler, tel = _replay_cell()
    lo, hi = data["load_window"]
    expected_j = (_counter_at(data["samples"], hi) - _counter_at(data["samples"], lo)) / 1000.0
    assert tel.available and abs(tel.energy_j_total - expected_j) < 1e-6
    gpu = tel.gpus[0]
    # The H200 ran near its 700 W limit: counter energy over the window agrees with the sampled draw.
    assert 550 < expected_j / (hi - lo) < 700
    assert 550 < gpu.power_draw_w.mean < 700 and gpu.power_draw_w.max <= 700
    assert gpu.sm_clock_mhz.min >= 1200 and gpu.samples > 40
    # Per-card limit and summed draw are different fields.
    assert tel.power_limit_w_per_gpu == [700.0] and gpu.power_limit_w == 700.0
    assert tel.power_draw_w_total_mean == gpu.power_draw_w.mean
    run = sampler.run_summary()
    assert run.source == "replay:" + FIXTURE.name and abs(run.energy_j_total - expected_j) < 1e-6


def test_joules_per_token_and_tokens_per_watt_in_the_cell():
    data, _, tel = _replay_cell()
    lo, hi = data["load_window"]
    span = hi - lo
    recs = [
        RequestRecord(
            cell=0,
            index=i,
            prompt_index=i,
            sent_s=0.0,
            first_token_s=0.05,
            last_token_s=span,
            done_s=span,
            output_tokens=2000,
            first_chunk_tokens=1,
            chunks=2000,
            token_source="server_continuous",
            ok=True,
            decode_tok_s=1999 / (span - 0.05),
        )
        for i in range(2)
    ]
    cell = build_cell(
        index=0,
        mode="burst",
        concurrency=2,
        records=recs,
        requests_planned=2,
        duration_s=None,
        window=None,
        telemetry=tel,
        client=None,
        cut_short=False,
    )
    assert abs(cell.telemetry.energy_j_per_token - tel.energy_j_total / 4000) < 1e-9
    assert (
        abs(cell.telemetry.tok_s_per_w - cell.metrics.aggregate_tok_s / tel.power_draw_w_total_mean)
        < 1e-9
    )


def test_sampler_thread_samples_at_about_10_hz():
    data = json.loads(FIXTURE.read_text())
    start, t0 = time.time(), data["load_window"][0]
    sampler = Sampler(ReplayReader.from_fixture(FIXTURE, clock=lambda: t0 + (time.time() - start)))
    sampler.begin()
    sampler.start()
    time.sleep(0.6)
    sampler.stop()
    tel = sampler.end()
    assert tel.gpus[0].samples >= 3 and tel.energy_j_total > 0


def test_no_gpu_is_recorded_as_unavailable_with_reason():
    reader, why = open_reader()
    if reader is None:  # this machine: no NVIDIA driver
        tel = Sampler(None, why).end()
        assert not tel.available and tel.reason == why and "NVML" in why


def test_throttle_reason_bits_are_named():
    assert throttle_names(0x4 | 0x40) == ("sw_power_cap", "hw_thermal_slowdown")


class TwoCards:
    """Two replayed cards behind the reader interface, as NVML shows a two-GPU rig: card 1 replays the same
    H200 trace 1 s earlier and is capped at 600 W, so each card's readings differ."""

    def __init__(self, clock: Clock) -> None:
        self.cards = [
            ReplayReader.from_fixture(FIXTURE, clock=clock),
            ReplayReader.from_fixture(FIXTURE, clock=lambda: clock.t - 1.0, power_limit_w=600.0),
        ]
        self.clock, self.source = clock, "replay:two-cards"

    def gpu_count(self) -> int:
        return 2

    def name(self, i: int) -> str | None:
        return self.cards[i].name(0)

    def power_limit_w(self, i: int) -> float | None:
        return self.cards[i].power_limit_w(0)

    def sample(self, i: int):
        return self.cards[i].sample(0)

    def energy_mj(self, i: int) -> float | None:
        return self.cards[i].energy_mj(0)


def test_two_cards_keep_per_card_limits_apart_from_summed_draw_and_energy():
    data, sampler, tel = _replay_cell(TwoCards)
    lo, hi = data["load_window"]
    card0, card1 = tel.gpus
    assert [g.index for g in tel.gpus] == [0, 1]
    # Each card's own limit, listed per card: never added up.
    assert tel.power_limit_w_per_gpu == [700.0, 600.0] and (
        card0.power_limit_w,
        card1.power_limit_w,
    ) == (700.0, 600.0)
    # The draw and the energy are summed over cards, under names that say so.
    assert tel.power_draw_w_total_mean == card0.power_draw_w.mean + card1.power_draw_w.mean
    assert tel.power_draw_w_total_mean > max(tel.power_limit_w_per_gpu)
    expected = [
        (_counter_at(data["samples"], hi - d) - _counter_at(data["samples"], lo - d)) / 1000.0
        for d in (0.0, 1.0)
    ]
    assert abs(card0.energy_j - expected[0]) < 1e-6 and abs(card1.energy_j - expected[1]) < 1e-6
    assert abs(tel.energy_j_total - sum(expected)) < 1e-6
    run = sampler.run_summary()
    assert [g.energy_j for g in run.gpus] == [card0.energy_j, card1.energy_j]
    assert (
        run.power_limit_w_per_gpu == [700.0, 600.0]
        and abs(run.energy_j_total - sum(expected)) < 1e-6
    )
