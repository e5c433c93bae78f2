"""rigbook's bench client beside GuideLLM and llama-benchy, on one synthetic server of known truth.

For each per-request rate and stream count, a fresh synthetic server (one token per SSE event,
the costliest case for a client) serves each client in turn. The truth is the server's own record:
tokens over the span from the first request's arrival to the last token sent. Each client's
reported aggregate is set against it (error %), its CPU time is read from the kernel
(``RUSAGE_CHILDREN``, the client process and everything it waited for) less the median CPU of
three one-request, one-token runs of the same client (start-up and imports; after one more that
fills the file cache), and divided by the
tokens the server counted (µs per token); the ceiling is 10^6 ÷ that, the tokens per second one
core could take in. Where what is left is within twice the three start-ups' spread, the cost is not
resolved and shows as "-" (short, slow cells: a few hundred tokens cost less than the start-up
scatters). Faults are the flags each client raised; a client that exits non-zero shows as
``exit N: <cause>``, its stderr's last lines printed as it happens and again below the table, and a
failed cell is run once more on a fresh server (same command), the first failure kept in its faults.
The machine's load average is printed beside the table: the machine is shared, and every figure
moves with it.

    python benchmarks/scripts/client/compare_clients.py --peers-venv ~/.cache/rigbook/bench-peers \\
        --tokenizer /path/to/a/tokenizer/folder --out benchmarks/runs/2026-12-06-cpu-client-compare/results.md

The peers are installed with ``benchmarks/scripts/client/install_peers.sh`` (a throwaway venv). Without a
peers venv, or without a tokenizer folder (both peers build their prompts with one), only rigbook
runs, and the table says why the others are missing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx

from rigbook_testkit.launch import start_synthetic

REPO = Path(__file__).resolve().parents[3]
PROMPT_TOKENS = 32


@dataclass
class Run:
    """One client at one (rate, streams) point."""

    tool: str
    rate: float
    streams: int
    truth_tok_s: float | None = None
    reported_tok_s: float | None = None
    server_tokens: float = 0.0
    cpu_s: float = 0.0
    faults: str = ""
    note: str = ""
    # The last lines of a client's stderr when it exited non-zero: why, kept in the raw output.
    stderr_tail: tuple[str, ...] = ()
    failed: bool = False  # it exited non-zero, or left no result or an incomplete one
    exit_code: int = 0

    @property
    def error_pct(self) -> float | None:
        if self.truth_tok_s and self.reported_tok_s is not None:
            return 100.0 * (self.reported_tok_s - self.truth_tok_s) / self.truth_tok_s
        return None

    @property
    def us_per_token(self) -> float | None:
        return (
            1e6 * self.cpu_s / self.server_tokens if self.server_tokens and self.cpu_s > 0 else None
        )


def _with_repo() -> str:
    """PYTHONPATH with this checkout first, keeping what was there (where rigbook's dependencies
    may be: the GPU machine installs them into a folder of their own)."""
    return os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)


@dataclass
class Startup:
    """CPU seconds of a one-request, one-token run of a client: the median of three, and their spread."""

    median: float
    spread: float


def generated(url: str) -> float:
    text = httpx.get(url + "/metrics").text
    return float(
        next(
            ln for ln in text.splitlines() if ln.startswith("vllm:generation_tokens_total")
        ).split()[-1]
    )


def truth(url: str, streams: int) -> float | None:
    """The server's own aggregate over the measured requests (the last ``streams`` it served; a
    client's warmup comes first): tokens ÷ (last token sent − first arrival)."""
    own = [r for r in httpx.get(url + "/_record").json()["requests"] if r["tokens"]][-streams:]
    if not own:
        return None
    return sum(r["tokens"] for r in own) / (
        max(r["last_send"] for r in own) - min(r["arrival"] for r in own)
    )


def run_child(
    cmd: list[str], env: dict | None = None, timeout: float = 900
) -> tuple[subprocess.CompletedProcess, float]:
    """Run a client; returns it and the CPU seconds it (and whatever it waited for) used. A client
    that runs past ``timeout`` is killed and comes back as exit -9 with what it had written."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired as exc:
        text = [
            (x.decode(errors="replace") if isinstance(x, bytes) else x or "")
            for x in (exc.stdout, exc.stderr)
        ]
        done = subprocess.CompletedProcess(
            cmd, -9, text[0], text[1] + f"\nkilled: timed out after {timeout:g} s\n"
        )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


# An exception's line in a traceback ("RuntimeError: …", "httpx.ReadTimeout: …", "KeyboardInterrupt").
_EXCEPTION_LINE = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Timeout)\b"
)


def stderr_tail(text: str, lines: int = 6) -> tuple[str, ...]:
    """The last lines of a client's output that say something (not blank, not a traceback's
    ``^^^`` marks), each cut to 300 characters."""
    said = [ln.rstrip()[:300] for ln in text.splitlines() if ln.strip().strip("^~")]
    return tuple(said[-lines:])


# Failures whose cause is known, by a phrase of their output: the cause in a few words.
KNOWN_FAILURES = (
    (
        "No measurement start or end times available",
        "GuideLLM lost its last request's final update (its own race; docs/bench.md)",
    ),
)


def failure_cause(text: str, width: int = 120) -> str:
    """Why a client failed, in one short line: a known cause (:data:`KNOWN_FAILURES`), else the
    exception line its last traceback ended with, else its last line of output; empty if it wrote
    nothing."""
    known = [cause for phrase, cause in KNOWN_FAILURES if phrase in text]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    found = [ln for ln in lines if _EXCEPTION_LINE.match(ln)]
    cause = (known or found or lines or [""])[-1]
    return cause if len(cause) <= width else cause[: width - 1] + "…"


def print_tail(tool: str, lines: tuple[str, ...]) -> None:
    """A failed client's last lines of stderr, in the raw output."""
    for line in lines:
        print(f"    {tool} stderr: {line}", flush=True)


# --- the three clients ---------------------------------------------------------------------------


def rigbook_cmd(url: str, streams: int, tokens: int, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "rigbook",
        "bench",
        url,
        "--model",
        "synthetic",
        "--concurrency",
        str(streams),
        "--requests",
        str(streams),
        "--max-tokens",
        str(tokens),
        "--warmup",
        "0",
        "--out",
        str(out),
        "--json",
    ]


def rigbook_read(done: subprocess.CompletedProcess, out: Path) -> tuple[float | None, str]:
    summary = json.loads(done.stdout)
    cell = summary["cells"][0] if summary.get("cells") else None
    codes = sorted({w["code"] for w in summary.get("warnings", [])})
    if summary.get("error"):
        codes.append(summary["error"]["code"])
    if cell and cell.get("client_bound"):
        # the result file goes with the temporary folder: the raw output keeps why it was flagged
        print(f"    rigbook client_bound: {cell['client']['reason']}", flush=True)
    return (cell["metrics"]["aggregate_tok_s"] if cell else None), ", ".join(codes)


def guidellm_cmd(
    peers: Path, url: str, streams: int, tokens: int, tokenizer: str, out: Path
) -> list[str]:
    return [
        str(peers / "bin" / "guidellm"),
        "run",
        "--backend",
        f"kind=openai_http,target={url},model=synthetic",
        "--profile",
        f"kind=concurrent,streams={streams}",
        "--constraint",
        f"kind=max_requests,count={streams}",
        "--tokenizer",
        f"kind=hf_auto,model={tokenizer}",
        "--data",
        f"kind=synthetic_text,prompt_tokens={PROMPT_TOKENS},output_tokens={tokens}",
        "--output",
        f"kind=json,path={out}",
        "--disable-console",
    ]


def guidellm_read(out: Path, sent: int) -> tuple[float | None, str]:
    """GuideLLM's aggregate output rate and its flags.

    ``metrics.output_tokens_per_second.successful.mean`` is GuideLLM's duration-weighted mean of
    its output-token rate over the benchmark's measured window: the successful requests' output
    tokens ÷ (``end_time`` − ``start_time``), an aggregate over all streams. The flags are the
    codes of its own ``warnings``, the counts of errored and incomplete requests, and how many of
    the ``sent`` requests its result leaves out: GuideLLM 0.8.1 can lose the last request's
    final update (docs/bench.md), and a rate over the rest is then low, not wrong by a rounding.
    """
    bench = json.loads(out.read_text())["benchmarks"][0]
    rate = bench["metrics"]["output_tokens_per_second"]["successful"]["mean"]
    flags = sorted({w["code"] for w in bench.get("warnings") or []})
    flags += [
        f"{len(bench['requests'][status])} {status}"
        for status in ("errored", "incomplete")
        if bench["requests"][status]
    ]
    recorded = bench["metrics"]["request_totals"]["total"]
    if recorded < sent:
        flags.append(f"{sent - recorded} of {sent} requests missing from its result")
    return (rate or None), ", ".join(flags)


# llama-benchy reads its prose corpus from a URL, cached under ~/.cache/llama-benchy by the URL's
# MD5; the cache is seeded with local text under a URL that is never fetched (no web here).
BENCHY_BOOK = "http://book.invalid/rigbook-corpus.txt"


def seed_benchy_corpus() -> None:
    cache = Path.home() / ".cache" / "llama-benchy"
    cache.mkdir(parents=True, exist_ok=True)
    text = (
        "It was a bright cold day in April, and the clocks were striking thirteen. Winston "
        "Smith, his "
        "chin nuzzled into his breast to escape the vile wind, slipped quickly through. "
    ) * 300
    (cache / f"{hashlib.md5(BENCHY_BOOK.encode()).hexdigest()}.txt").write_text(
        text, encoding="utf-8"
    )


def benchy_cmd(
    peers: Path, url: str, streams: int, tokens: int, tokenizer: str, out: Path
) -> list[str]:
    return [
        str(peers / "bin" / "llama-benchy"),
        "--base-url",
        url + "/v1",
        "--model",
        "synthetic",
        "--tokenizer",
        tokenizer,
        "--pp",
        str(PROMPT_TOKENS),
        "--tg",
        str(tokens),
        "--runs",
        "1",
        "--concurrency",
        str(streams),
        "--no-warmup",
        "--skip-coherence",
        "--latency-mode",
        "none",
        "--book-url",
        BENCHY_BOOK,
        "--format",
        "json",
        "--save-result",
        str(out),
    ]


def benchy_read(out: Path) -> tuple[float | None, str]:
    """llama-benchy's aggregate generation rate over all streams (``tg_throughput``)."""
    rows = json.loads(out.read_text()).get("benchmarks") or []
    tg = rows[0].get("tg_throughput") if rows else None
    return (tg["mean"] if tg else None), ("" if rows else "no result")


# --- the run -------------------------------------------------------------------------------------


def read_result(run: Run, done: subprocess.CompletedProcess, reader) -> tuple[float | None, str]:
    """A client's reported rate and faults. A non-zero exit is a fault whatever it left behind,
    named with its cause (``exit 1: RuntimeError: …``), and its stderr's last lines are kept on
    ``run``; a result that cannot be read is no result, and the output's tail goes in the note."""
    try:
        reported, faults = reader()
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        # A client that failed leaves no result; one that exited 0 without one is a fault too.
        reported, faults = None, "" if done.returncode else f"no result ({type(exc).__name__})"
    run.exit_code = done.returncode
    run.failed = done.returncode != 0 or reported is None or "missing from its result" in faults
    if done.returncode != 0:
        text = done.stderr or done.stdout
        cause = failure_cause(text)
        run.stderr_tail = stderr_tail(text)
        exit_fault = f"exit {done.returncode}" + (f": {cause}" if cause else ", no output")
        faults = ", ".join(f for f in (exit_fault, faults) if f)
    if reported is None:
        run.note = (done.stderr or done.stdout)[-300:].replace("\n", " ")
    return reported, faults


def measure_point(
    tool: str,
    rate: float,
    streams: int,
    tokens: int,
    args,
    tmp: Path,
    startup_cpu: dict[str, Startup],
) -> Run:
    run = Run(tool=tool, rate=rate, streams=streams)
    server, url = start_synthetic(
        *("--rate", str(rate), "--falloff", "0", "--tokens-per-chunk", "1", "--ttft-s", "0.03"),
        show_stderr=True,
    )
    try:
        httpx.post(url + "/_reset")
        g0 = generated(url)
        out = tmp / f"{tool}-{rate:g}-{streams}.json"
        out.unlink(missing_ok=True)  # the start-up runs share a name: never read an earlier one's
        if tool == "rigbook":
            done, cpu = run_child(
                rigbook_cmd(url, streams, tokens, out), {"PYTHONPATH": _with_repo()}
            )
            reader = partial(rigbook_read, done, out)
        elif tool == "guidellm":
            done, cpu = run_child(
                guidellm_cmd(args.peers_venv, url, streams, tokens, args.tokenizer, out)
            )
            reader = partial(guidellm_read, out, streams)
        else:
            done, cpu = run_child(
                benchy_cmd(args.peers_venv, url, streams, tokens, args.tokenizer, out)
            )
            reader = partial(benchy_read, out)
        run.reported_tok_s, run.faults = read_result(run, done, reader)
        run.server_tokens = generated(url) - g0
        run.truth_tok_s = truth(url, streams)
        start = startup_cpu.get(tool, Startup(0.0, 0.0))
        # A cell whose CPU above the start-up is within the start-ups' own scatter has no
        # resolved cost per token: it shows "-" rather than a figure made of noise.
        above = cpu - start.median
        run.cpu_s = above if above > 2 * start.spread else 0.0
    finally:
        server.terminate()
        server.wait(10)
    return run


def measure_once_more(measure: Callable[[], Run]) -> Run:
    """A point as ``measure`` (a :func:`measure_point` call) measures it, run once more on a fresh
    server if the client failed (GuideLLM 0.8.1 now and then loses a request's last update, a race
    of its own: see docs/bench.md). The same command, so the same measure; the first failure stays
    in the faults (``retried after exit 1: …``) and in the raw output."""
    run = measure()
    if not run.failed:
        return run
    print(
        f"{run.tool} rate {run.rate:g} streams {run.streams} failed, run once more: {run.faults}",
        flush=True,
    )
    print_tail(run.tool, run.stderr_tail)
    again = measure()
    if again.failed:
        print(f"{run.tool} rate {run.rate:g} streams {run.streams} failed again", flush=True)
        print_tail(again.tool, again.stderr_tail)
    again.faults = (
        f"twice: {run.faults}"
        if again.faults == run.faults
        else ", ".join(f for f in (again.faults, f"retried after {run.faults}") if f)
    )
    again.stderr_tail = again.stderr_tail or run.stderr_tail
    return again


def startup_cost(measure: Callable[[], Run]) -> Startup:
    """A client's start-up CPU: one request of one token (``measure``), three times after one that
    fills the file cache; the median and the spread. Such a run reports no rate (one token has
    none; llama-benchy's ``tg_throughput`` is then empty), so only its exit status says whether it
    ran; one that exited non-zero is run once more, and a second failure stops the comparison,
    since every cost per token of that client would subtract an unknown."""
    cpus = []
    for _ in range(4):
        run = measure()
        if run.exit_code != 0:
            print(f"{run.tool} start-up run failed, run once more: {run.faults}", flush=True)
            print_tail(run.tool, run.stderr_tail)
            run = measure()
            if run.exit_code != 0:
                print_tail(run.tool, run.stderr_tail)
                raise SystemExit(f"{run.tool}: its start-up run failed twice ({run.faults})")
        cpus.append(run.cpu_s)
    cpus = cpus[1:]
    return Startup(statistics.median(cpus), max(cpus) - min(cpus))


def table(runs: list[Run], loads: list[str], missing: list[str]) -> str:
    lines = [
        "| client | tok/s per request | streams | truth tok/s | reported tok/s "
        "| reported vs truth | "
        "CPU µs/token | ceiling tok/s | faults |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        err = f"{r.error_pct:+.2f} %" if r.error_pct is not None else "-"
        us = r.us_per_token
        cost = f"{us:.1f} | {1e6 / us:,.0f}" if us else "- | -"
        faults = (r.faults or r.note or "-").replace("|", "\\|")
        lines.append(
            f"| {r.tool} | {r.rate:g} | {r.streams} | {r.truth_tok_s or 0:,.0f} | "
            f"{r.reported_tok_s or 0:,.0f} | {err} | {cost} | {faults} |"
        )
    lines.append("")
    lines.append("Machine load (1, 5, 15 min averages) during the run: " + "; ".join(loads) + ".")
    lines += [f"Not run: {m}" for m in missing]
    for r in runs:
        if r.stderr_tail:
            lines += [
                "",
                f"{r.tool} at {r.rate:g} tok/s × {r.streams}, {r.faults}; its stderr ended:",
            ]
            lines += ["```", *r.stderr_tail, "```"]
    return "\n".join(lines) + "\n"


def cost_ratios(runs: list[Run]) -> list[str]:
    """For each point measured more than once and each peer: the medians of the µs per token of
    rigbook and of the peer, and the peer's over rigbook's in each round, where both resolved."""
    lines = []
    points = sorted({(r.rate, r.streams) for r in runs})
    for rate, streams in points:
        at = [r for r in runs if (r.rate, r.streams) == (rate, streams)]
        ours = [r.us_per_token for r in at if r.tool == "rigbook"]
        if len(ours) < 2:
            continue
        for peer in sorted({r.tool for r in at} - {"rigbook"}):
            theirs = [r.us_per_token for r in at if r.tool == peer]
            rounds = [t / o for o, t in zip(ours, theirs, strict=False) if o and t]
            if not rounds:
                continue
            mine = statistics.median(o for o in ours if o)
            other = statistics.median(t for t in theirs if t)
            lines.append(
                f"{rate:g} tok/s x {streams} streams, {len(rounds)} rounds: rigbook "
                f"{mine:.1f} µs/token, {peer} {other:.1f} ({other / mine:.2f}x of the medians); "
                f"each round {', '.join(f'{x:.2f}x' for x in rounds)}, "
                f"median {statistics.median(rounds):.2f}x"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peers-venv", type=Path, default=Path.home() / ".cache/rigbook/bench-peers")
    ap.add_argument(
        "--tokenizer", default=None, help="a local tokenizer folder (tokenizer.json) for the peers"
    )
    ap.add_argument("--rates", default="40,160", help="per-request tok/s")
    ap.add_argument("--streams", default="1,4,64,256")
    # Long enough that a cell's CPU stands clear of the start-up's scatter (about 0.3 s here).
    ap.add_argument("--tokens", type=int, default=600, help="tokens per reply")
    ap.add_argument("--out", type=Path, default=None, help="write the Markdown table here too")
    ap.add_argument(
        "--peers", default="llama-benchy,guidellm", help="which peers to run beside rigbook"
    )
    # The cost per token of one run moves by a tenth or more between identical runs here: rounds
    # of every client in turn, each round on the same machine state, give the ratio a spread.
    ap.add_argument("--repeat", type=int, default=1, help="rounds of each point, clients in turn")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat: at least 1 round")
    tools, missing = ["rigbook"], []
    peers_ok = args.peers_venv.is_dir() and (args.peers_venv / "bin" / "guidellm").exists()
    if not peers_ok:
        missing.append(
            f"GuideLLM and llama-benchy: no peers venv at {args.peers_venv} "
            "(benchmarks/scripts/client/install_peers.sh makes one)"
        )
    elif not args.tokenizer:
        missing.append(
            "GuideLLM and llama-benchy: no --tokenizer folder (both build prompts with one, "
            "and this machine cannot download one)"
        )
    else:
        tools += [t for t in args.peers.split(",") if t]
    runs: list[Run] = []
    loads: list[str] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        seed_benchy_corpus()
        startup: dict[str, Startup] = {}
        for tool in tools:
            # One request of one token, three times after one that fills the file cache: the
            # start-up and import cost taken off every run (the median), and how much it scatters.
            startup[tool] = startup_cost(partial(measure_point, tool, 1000, 1, 1, args, tmp, {}))
            print(f"{tool} start-up: {startup[tool]}", flush=True)
        for rate in (float(x) for x in args.rates.split(",")):
            for streams in (int(x) for x in args.streams.split(",")):
                loads.append("{:.1f}, {:.1f}, {:.1f}".format(*os.getloadavg()))
                for tool in [t for _ in range(args.repeat) for t in tools]:
                    run = measure_once_more(
                        partial(measure_point, tool, rate, streams, args.tokens, args, tmp, startup)
                    )
                    runs.append(run)
                    print(
                        f"{tool} rate {rate:g} streams {streams}: "
                        f"truth {run.truth_tok_s or 0:.0f}, "
                        f"reported {run.reported_tok_s or 0:.0f}, "
                        f"{run.us_per_token or 0:.1f} µs/token "
                        f"{run.faults}",
                        flush=True,
                    )
    text = table(runs, loads, missing)
    if args.repeat > 1:
        text += "\n" + "\n".join(cost_ratios(runs)) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
