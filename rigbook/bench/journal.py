"""The request journal: every finished request appended as it ends, fsync'd in batches.

Writes go through a queue to a thread, so the event loop never waits on the disk; the
thread writes whatever has queued up and fsyncs once per batch.

One JSON object a line: ``start`` (conditions and extras), ``cell_start``,
``request`` (a RequestRecord), ``stream_ended`` (a sustained request's record as it
ended, before the window that may cut it is known; its ``request`` line follows at the
cell's end), ``cell_end`` (the finished cell, without its requests), ``end``. A run killed
with SIGKILL leaves a journal from which :func:`rebuild` makes a result marked
``cut_short`` through the same metric code.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from pathlib import Path

import orjson
from pydantic import ValidationError

from rigbook.bench.assemble import assemble
from rigbook.bench.metrics import build_cell
from rigbook.bench.result import (
    BenchResult,
    Cell,
    CellTelemetry,
    Conditions,
    RequestRecord,
    RunTelemetry,
)
from rigbook.errors import InputError
from rigbook.findings import Finding


def journal_path(result_path: Path) -> Path:
    """The journal that sits beside a result file."""
    return result_path.with_name(result_path.stem + ".journal.jsonl")


class Journal:
    """Append-only JSONL written by a background thread; a kill loses at most the batch in flight.

    ``write`` takes pydantic models as they are and the thread turns them into JSON, so the
    caller's loop pays neither the encoding nor the fsync."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(path, "ab")  # noqa: SIM115 - open for the run; close() ends it
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._run, name="rigbook-journal", daemon=True)
        self._thread.start()

    def write(self, kind: str, **payload) -> None:
        """Queue one line; an earlier failed write is raised here (a full disk stops the run)."""
        if self._error is not None:
            raise self._error
        self._q.put((kind, payload))

    def _run(self) -> None:
        # Block for one line, then take all that queued meanwhile: while one fsync runs, the
        # next batch gathers, so a busy run writes in large batches and an idle one at once.
        closing = False
        while not closing:
            batch = [self._q.get()]
            while True:
                try:
                    batch.append(self._q.get_nowait())
                except queue.Empty:
                    break
            closing = None in batch
            syncs = [p["event"] for k, p in (b for b in batch if b) if k == "_sync"]
            lines = [_line(k, p) for k, p in (b for b in batch if b) if k != "_sync"]
            try:
                if lines:
                    self._f.write(b"".join(lines))
                    self._f.flush()
                    os.fsync(self._f.fileno())
            except OSError as exc:
                self._error = exc
            for event in syncs:
                event.set()

    def sync(self) -> None:
        """Wait until everything queued so far is on disk."""
        done = threading.Event()
        self._q.put(("_sync", {"event": done}))
        done.wait()

    def close(self) -> None:
        """Write what is queued, fsync and close; raises a write error that happened meanwhile."""
        self._q.put(None)
        self._thread.join()
        self._f.close()
        if self._error is not None:
            raise self._error


def _line(kind: str, payload: dict) -> bytes:
    body = {
        k: v.model_dump(mode="json") if hasattr(v, "model_dump") else v for k, v in payload.items()
    }
    return orjson.dumps({"type": kind, **body}) + b"\n"


def rebuild(path: Path | str) -> BenchResult:
    """A result from a journal alone; cells without a ``cell_end`` are rebuilt from their requests."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(
            "E_RESULT_INVALID", f"cannot read journal {path}: {exc.strerror or exc}"
        ) from exc
    events = []
    for n, line in enumerate(lines, 1):
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            if n == len(lines):  # the line being written when the process died
                break
            raise InputError("E_RESULT_INVALID", f"{path}:{n} is not JSON") from None
    if not events or events[0].get("type") != "start":
        raise InputError(
            "E_RESULT_INVALID",
            f"{path} does not start with a journal header",
            "Give a *.journal.jsonl file rigbook bench wrote.",
        )
    try:
        cond = Conditions.model_validate(events[0]["conditions"])
        extra = events[0].get("extra") or {}
        starts: dict[int, dict] = {}
        ends: dict[int, Cell] = {}
        requests: dict[int, list[RequestRecord]] = {}
        # sustained cells: the records journaled as their streams ended
        ended: dict[int, list[RequestRecord]] = {}
        finished = False
        for ev in events[1:]:
            kind = ev.get("type")
            if kind == "cell_start":
                starts[ev["index"]] = ev
                requests.setdefault(ev["index"], [])
            elif kind in ("request", "stream_ended"):
                rec = RequestRecord.model_validate(ev["record"])
                (requests if kind == "request" else ended).setdefault(rec.cell, []).append(rec)
            elif kind == "cell_end":
                cell = Cell.model_validate(ev["cell"])
                ends[cell.index] = cell
            elif kind == "end":
                finished = True
    except (ValidationError, KeyError) as exc:
        raise InputError(
            "E_RESULT_INVALID", f"{path} has a malformed journal entry: {exc}"
        ) from exc
    cells = []
    for index in sorted(starts):
        recs = sorted(requests.get(index, []), key=lambda r: r.index)
        if index in ends:
            cells.append(ends[index].model_copy(update={"requests": recs}))
            continue
        # A cut sustained cell's `request` lines, if any, are a part of its end that was being
        # written; the `stream_ended` lines hold every stream that finished.
        recs = sorted(ended.get(index, []), key=lambda r: r.index) or recs
        s = starts[index]
        cells.append(
            build_cell(
                index=index,
                mode=s["mode"],
                concurrency=s["concurrency"],
                records=recs,
                requests_planned=s.get("requests_planned"),
                duration_s=s.get("duration_s"),
                window=None,
                telemetry=CellTelemetry(
                    available=False, reason="lost: the run was killed before this cell ended"
                ),
                client=None,
                cut_short=True,
            )
        )
    cut = cond.cut_short or not finished
    cond = cond.model_copy(update={"cut_short": cut})
    warnings = (
        [Finding.make("W_CUT_SHORT", "rebuilt from the journal of a run that did not finish")]
        if cut
        else []
    )
    return assemble(
        cond,
        cells,
        RunTelemetry(available=False, reason="rebuilt from the journal; run totals lost"),
        warnings=warnings,
        journal=path.name,
        extra=extra,
    )
