"""Compare two results that `rigbook bench` measured against real servers (the synthetic one, over HTTP)."""

from __future__ import annotations

import pytest

from rigbook.compare import compare_refs
from rigbook.compare.render_md import render_md
from tests.bench.helpers import bench, start_synthetic


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """The same bench against a server streaming 80 tok/s and one streaming 40 tok/s. Slow streams
    (one token an event, 12.5 ms and more apart) leave room for a busy machine's scheduling, so
    the bench does not flag its cells client_bound and they become perf points."""
    out = tmp_path_factory.mktemp("measured")
    paths = []
    for rate in (80, 40):
        proc, url = start_synthetic(
            "--rate", str(rate), "--falloff", "0", "--tokens-per-chunk", "1"
        )
        try:
            result = bench(
                url, out / f"rate-{rate}.json", concurrency=[1, 2], requests=2, max_tokens=40
            )
        finally:
            proc.terminate()
            proc.wait(10)
        flagged = [c.client.reason for c in result.cells if c.client_bound]
        if flagged:  # an overloaded machine descheduled the client: its cells publish no point
            pytest.skip(f"the bench flagged its own cells client_bound: {flagged[0]}")
        paths.append(out / f"rate-{rate}.json")
    return paths


def test_twice_the_stream_rate_reads_as_twice_the_throughput(measured):
    fast, slow = measured
    pair = compare_refs([str(fast), str(slow)]).pairs[0]
    assert [p.concurrency for p in pair.points] == [1, 2]
    for point in pair.points:
        assert point.decode_ratio_pct == pytest.approx(200, rel=0.1)
        throughput = next(v for v in point.verdicts if v.aspect == "throughput")
        # Same model, profile, client and (absent) rig: like for like, at most with caveats.
        assert throughput.verdict != "not comparable", throughput.reasons
    efficiency = next(v for v in pair.verdicts if v.aspect == "power_efficiency")
    assert efficiency.verdict == "not comparable"  # no GPU, no measured energy


def test_markdown_names_both_results(measured):
    fast, slow = measured
    text = render_md(compare_refs([str(fast), str(slow)]))
    assert "rate-80.json" in text and "rate-40.json" in text and "throughput" in text


def test_two_files_of_one_name_are_told_apart_by_their_folders(measured, tmp_path):
    fast, slow = measured
    for folder, src in (("h200", fast), ("cpu", slow)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "result.json").write_bytes(src.read_bytes())
    comparison = compare_refs(
        [str(tmp_path / "h200" / "result.json"), str(tmp_path / "cpu" / "result.json")]
    )
    assert [s.name for s in comparison.sources] == ["h200/result.json", "cpu/result.json"]
    assert comparison.sources[0].content_hash != comparison.sources[1].content_hash
    text = render_md(comparison)
    assert "## h200/result.json vs cpu/result.json" in text
