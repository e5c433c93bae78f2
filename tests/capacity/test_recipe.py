"""`--recipe SLUG` when the recipe already runs: that launch is measured and left running."""

from __future__ import annotations

import psutil

from rigbook.bench.synthetic_curves import Curve
from rigbook.capacity.serve import serving
from rigbook.launch import state
from rigbook.recipe import EMBEDDED_SLUG
from tests.capacity.helpers import MAX_TOKENS, serve
from tests.capacity.test_cli import rigbook


def test_a_running_launch_is_measured_and_left_running(rigbook_home, tmp_path):
    proc, url = serve(Curve(shape="cliff", rate_tok_s=100, knee=2, drop=0.4))
    try:
        # The synthetic server stands in for the recipe's engine, recorded as its running launch.
        state.save(
            state.RunState(
                name="capacity-test",
                recipe=EMBEDDED_SLUG,
                kind="llama_cpp",
                pid=proc.pid,
                pgid=proc.pid,
                create_time=psutil.Process(proc.pid).create_time(),
                started_at=state.now_iso(),
                url=url,
                port=int(url.rsplit(":", 1)[1]),
                model_id="synthetic",
                slot=[],
                log=str(tmp_path / "log"),
                argv=[],
            )
        )
        with serving(None, EMBEDDED_SLUG) as served:
            assert served.url == url and served.started is None
            assert served.recipe == EMBEDDED_SLUG
        done = rigbook(
            "capacity",
            "--recipe",
            EMBEDDED_SLUG,
            "--slo",
            "per_user_tok_s>=80",
            "--profile",
            "quick",
            "--model",
            "synthetic",
            "--max-tokens",
            str(MAX_TOKENS),
            "--warmup",
            "0",
            "--max-concurrency",
            "4",
            "--reruns",
            "0",
            "--out",
            str(tmp_path / "c.json"),
            "--json",
        )
        assert done.returncode == 0, done.stderr
        assert '"users": 2' in done.stdout
        assert proc.poll() is None and state.load("capacity-test") is not None
    finally:
        proc.terminate()
        proc.wait(10)
