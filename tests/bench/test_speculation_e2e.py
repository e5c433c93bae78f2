"""Speculative decoding measured on the real llama-server with the embedded model.

Synthetic acceptance (``--spec-synth-len L``) makes the target accept drafted tokens at a rate
the server is told: a ground truth for the acceptance rigbook reads from the engine's counters.
An n-gram speculator (``ngram-simple``), which drafts from text already in the context, shows
that acceptance depends on the text: prose against the deliberately repetitive class.
Tok/s is not asserted: the machine's load sets it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from rigbook.bench.result import BenchResult, Speculation, load_result
from tests.bench import helpers
from tests.conftest import embedded_model_path, free_port
from tests.in_process import rigbook_here

# Starting a server and a few benches on shared cores can outlast the suite's 300 s per test.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]

MODEL_ID = "smollm2-135m-instruct"
DRAFT_MAX = 3  # --spec-draft-n-max, llama-server's default: a step drafts at most 3 tokens


def llama_server_program() -> str:
    beside = Path(sys.executable).parent / "llama-server"
    found = str(beside) if beside.is_file() else shutil.which("llama-server")
    if found is None:
        pytest.fail("llama-server is not installed: run `make setup-test`")
    return found


@contextmanager
def serving(argv: list[str], name: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``argv`` (a server that listens on the port it is given after ``--port``) until the
    block ends; yields its base URL once /health answers 200."""
    port = free_port()
    cache = Path(__file__).parent.parent.parent / ".pytest_cache"
    log_path = cache / f"{name}-spec-{port}.log" if cache.is_dir() else Path(os.devnull)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [*argv, "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{name} exited with {proc.returncode} (log: {log_path})")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{name} did not become ready in 300 s (log: {log_path})")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


def llama_server(*spec_args: str):
    """The real llama-server with the embedded model and ``spec_args``.

    One thread: on a machine whose cores are shared, llama.cpp's threads wait for each other
    at every barrier of a decode, and a second thread makes each step slower, not faster."""
    return serving(
        [
            llama_server_program(),
            "--model", str(embedded_model_path()), "--alias", MODEL_ID, "--parallel", "1",
            "--threads", "1", "--threads-batch", "1", "--ctx-size", "2048", "--metrics",
            "--jinja", *spec_args,
        ],
        "llama-server",
    )  # fmt: skip


def bench(url: str, out: Path, *options: str) -> tuple[BenchResult, str]:
    """A bench at concurrency 1 with no warmup; the result and what the terminal showed."""
    args = ["bench", url, "--model", MODEL_ID, "--concurrency", "1", "--warmup", "0"]
    p = rigbook_here(*args, *options, "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    return load_result(out), p.stderr


def tolerance(drafts: float, requests: int) -> float:
    """How far a measured mean acceptance length may honestly sit from the set one.

    Each verification step accepts 0 to DRAFT_MAX tokens, drawn independently: its variance is
    at most DRAFT_MAX² / 4 (Popoviciu), so the mean over N steps has a standard deviation of at
    most DRAFT_MAX / (2 √N); four of them. Each reply's last step may draft fewer tokens than
    DRAFT_MAX (the reply ends), which can lower the mean by at most DRAFT_MAX per reply over N.
    """
    return 4 * DRAFT_MAX / (2 * math.sqrt(drafts)) + requests * DRAFT_MAX / drafts


def per_request_agrees(s: Speculation, requests: int) -> None:
    """llama-server's responses report their own drafted and accepted tokens (``timings``): each
    request's sum is the cell's counters, exactly (no other traffic reaches the server)."""
    per = s.per_request
    assert per is not None and 1 <= per.requests <= requests, s
    assert (per.draft_tokens, per.accepted_tokens) == (s.draft_tokens, s.accepted_tokens), s
    assert per.matches_counters is True


def test_synthetic_acceptance_is_read_back_as_set_and_compare_names_it(tmp_path):
    """The embedded model drafts for itself (draft-simple); --spec-synth-len overrides which drafted
    tokens the target accepts, so the engine's counters must give back the length that was set, at
    each of two settings. Compare then puts the rate gap between the two runs down to acceptance."""
    model = str(embedded_model_path())
    requests = 2
    results: dict[float, Path] = {}
    for length in (1.5, 3.5):
        with llama_server(
            "--spec-type", "draft-simple", "--model-draft", model, "--threads-draft", "1",
            "--threads-batch-draft", "1", "--spec-synth-len", str(length),
        ) as url:  # fmt: skip
            out = tmp_path / f"synth-{length}.json"
            # A cell whose client the machine descheduled rightly makes no perf point (compare
            # needs one): measure again, a bounded number of times.
            for _attempt in range(3):
                result, _ = bench(
                    url,
                    out,
                    "--profile",
                    "quick",
                    "--requests",
                    str(requests),
                    "--max-tokens",
                    "96",
                )
                if not result.cells[0].client_bound:
                    break
            else:
                pytest.skip("the machine descheduled the bench client in three runs in a row")
        (cell,) = result.cells
        s = cell.speculation
        assert cell.valid and s is not None and s.engine == "llama.cpp"
        assert s.drafts and s.draft_tokens <= DRAFT_MAX * s.drafts
        assert s.mean_acceptance_length is not None
        assert abs(s.mean_acceptance_length - length) <= tolerance(s.drafts, requests), s
        # Each step's own token and the drafted tokens it accepted are tokens the engine generated.
        assert cell.server is not None
        assert s.drafts + s.accepted_tokens <= cell.server.generation_tokens
        assert sum(s.accepted_per_position) == s.accepted_tokens
        per_request_agrees(s, requests)
        (point,) = result.perf_points
        assert point.conditions is not None
        assert point.conditions.speculative_acceptance_length == s.mean_acceptance_length
        results[length] = out
    p = rigbook_here("compare", str(results[3.5]), str(results[1.5]), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    (pair,) = json.loads(p.stdout)["pairs"]
    gap = pair["points"][0]["acceptance"]
    la, lb = gap["a_mean_acceptance_length"], gap["b_mean_acceptance_length"]
    assert la > lb and gap["acceptance_ratio_pct"] == pytest.approx(100 * la / lb)
    throughput = next(v for v in pair["verdicts"] if v["aspect"] == "throughput")
    (reason,) = [
        r for r in throughput["reasons"] if r["condition"] == "speculative_acceptance_length"
    ]
    assert reason["message"].startswith(
        f"mean acceptance length differs: {la:.2f} vs {lb:.2f} tokens per step"
    )


def test_an_ngram_drafter_accepts_more_on_repetitive_text_and_rigbook_shows_it(tmp_path):
    """ngram-simple drafts the tokens that followed the last 3 tokens' earlier occurrence: on text
    that repeats a line, most drafts are right; on prose, few are."""
    with llama_server(
        "--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "3",
        "--spec-ngram-simple-size-m", "8",
    ) as url:  # fmt: skip
        prose, _ = bench(url, tmp_path / "prose.json", "--profile", "quick")
        repetitive, shown = bench(url, tmp_path / "rep.json", "--profile", "quick-repetitive")
    assert prose.conditions.profile.workload == "prose"
    assert repetitive.conditions.profile.workload == "repetitive"
    p, r = prose.cells[0].speculation, repetitive.cells[0].speculation
    assert p is not None and r is not None and r.acceptance_rate is not None
    assert r.draft_tokens > 0 and r.mean_acceptance_length is not None
    per_request_agrees(r, repetitive.cells[0].metrics.requests_ok)
    # Not a statistical bound: the content effect is large (on this model, most drafts from a
    # repeated line are right and most from prose are wrong).
    assert r.acceptance_rate - (p.acceptance_rate or 0.0) >= 0.3, (p, r)
    assert r.mean_acceptance_length > (p.mean_acceptance_length or 1.0)
    # rigbook shows it: the terminal summary, and the report.
    assert "speculation, C=1:" in shown and "drafted tokens accepted" in shown
    rep = rigbook_here(
        "report", str(tmp_path / "rep.json"), "--out", str(tmp_path / "report"), "--json"
    )
    assert rep.returncode == 0, rep.stderr
    page = Path(json.loads(rep.stdout)["report"]).read_text()
    assert "Speculative decoding" in page and "repetitive prompts" in page


CATALOG_NGRAM = "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp-ngram"


def test_the_catalog_ngram_recipe_serves_and_its_bench_keeps_the_acceptance(tmp_path):
    """The catalog's n-gram recipe, launched by `rigbook up` as a user would: a bench that names
    the recipe carries each cell's acceptance, per cell and per request, and in its perf point
    beside the recipe's method; no W_SPEC_NO_ACCEPTANCE."""
    port = free_port()
    up = helpers.rigbook(
        "up", CATALOG_NGRAM, "--yes", "--port", str(port), "--name", "spec-ngram",
        "--timeout", "300", timeout=400,
    )  # fmt: skip
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        result, _ = bench(
            f"http://127.0.0.1:{port}",
            tmp_path / "ngram.json",
            "--profile",
            "quick-repetitive",
            "--recipe",
            CATALOG_NGRAM,
        )
    finally:
        down = helpers.rigbook("down", "spec-ngram")
    assert down.returncode == 0, down.stdout + down.stderr
    (cell,) = result.cells
    s = cell.speculation
    assert s is not None and s.draft_tokens > 0 and s.mean_acceptance_length is not None
    per_request_agrees(s, cell.metrics.requests_ok)
    assert not [w for w in result.warnings if w.code == "W_SPEC_NO_ACCEPTANCE"]
    (point,) = result.perf_points
    assert point.conditions is not None and point.conditions.speculative_method == "ngram-simple"
    assert point.conditions.speculative_acceptance_length == s.mean_acceptance_length
