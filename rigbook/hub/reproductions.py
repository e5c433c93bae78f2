"""Reproductions on the hub: a recipe revision's claims judged on someone's rig, kept apart from claims
and from measured points.

`rigbook reproduce --publish` first publishes the bench result (the evidence, as measured points),
then posts a :class:`~rigbook.reproduce.document.ReproductionDocument`. The hub finds the revision
the document names by its content hash and the result by its hash among this recipe's results,
recomputes every row and the verdict from them, and refuses the document (E_REPRODUCTION_REFUSED)
when anything differs. An accepted reproduction is a row of ``reproductions`` and an entry of the
record's ``reproductions`` list, in a new revision; later revisions carry the list, so the recipe's
JSON and page show every reproduction with the revision it judged.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from rigbook.bench.result import BenchResult
from rigbook.errors import InputError
from rigbook.hub import repository as repo
from rigbook.hub.models import ReproductionRow, ResultRow, RevisionRow
from rigbook.hub.schemas import ReproductionAccepted
from rigbook.hub.verify import check_signature
from rigbook.recipe.load import parse_recipe
from rigbook.reproduce.document import ReproductionDocument, document_hash, recompute
from rigbook.reproduction import VerdictRow

RECORD_KEY = "reproductions"


def posted_problems(given: dict[str, Any]) -> list[str]:
    """A recipe write may not carry reproductions: only published reproductions add them."""
    if RECORD_KEY in given:
        return [
            f"{RECORD_KEY}: set by the hub from published reproductions "
            f"(POST /api/v1/recipes/{{slug}}/reproductions); remove it"
        ]
    return []


def _point(row: VerdictRow) -> dict[str, Any]:
    iv = row.interval
    return {
        "concurrency": row.concurrency,
        "rate": row.rate,
        "claim_tok_s": row.claim_tok_s,
        "measured_tok_s": row.measured_tok_s,
        "low": iv.low if iv else None,
        "high": iv.high if iv else None,
        "ratio_pct": row.ratio_pct,
        "call": row.call,
        "differs": row.differing,
        "not_comparable": row.not_comparable,
    }


def _entry(
    doc: ReproductionDocument,
    rows: list[VerdictRow],
    reproduced_no: int,
    evidence: ResultRow,
    token_name: str,
    key_id: str | None,
    when: str,
) -> dict[str, Any]:
    c = doc.conditions
    return {
        "content_hash": doc.content_hash,
        "reproduced_revision": reproduced_no,
        "verdict": doc.verdict,
        "card": c.card,
        "gpu_count": c.gpu_count,
        "power_limit_w_per_gpu": c.power_limit_w_per_gpu,
        "engine": c.engine,
        "engine_version": c.engine_version,
        "quant": c.quant,
        "workload": c.workload,
        "profile": doc.profile,
        "max_tokens": doc.max_tokens,
        "assumed": doc.assumed,
        "evidence": {
            "result": evidence.content_hash,
            "revision": evidence.revision_no,
            "href": f"/api/v1/recipes/{evidence.slug}/results/{evidence.content_hash}.json",
        },
        "points": [_point(r) for r in rows],
        "published_by": token_name,
        "signed_by": key_id,
        "published_at": when,
    }


def _refused(problems: list[str]) -> InputError:
    return InputError(
        "E_REPRODUCTION_REFUSED",
        f"the reproduction cannot be published: {len(problems)} problem(s)",
        details=problems,
    )


def add_reproduction(
    factory: sessionmaker[Session],
    slug: str,
    doc: ReproductionDocument,
    token_name: str,
    given: object = None,
    signed: tuple[str, str] | None = None,
) -> ReproductionAccepted:
    """Store ``doc`` as a reproduction of ``slug`` (once), after checking it against the stored
    result and revision it names; ``given`` is the JSON as posted (hashed, signed and stored)."""
    body = given if isinstance(given, dict) else doc.model_dump(mode="json")
    key_id, signature = signed if signed is not None else (None, None)

    def write(session: Session) -> ReproductionAccepted:
        row = repo._locked_row(session, slug) if repo.SLUG_RE.fullmatch(slug) else None
        if row is None:
            raise InputError("E_RECIPE_NOT_FOUND", f"no recipe {slug!r} on this hub")
        problems = []
        if doc.recipe != slug:
            problems.append(f"recipe: {doc.recipe!r}, published to {slug!r}")
        if doc.content_hash != document_hash(body):
            problems.append("content_hash: not the hash of the document as sent")
        revision = session.execute(
            select(RevisionRow)
            .where(RevisionRow.slug == slug, RevisionRow.content_hash == doc.recipe_hash)
            .order_by(RevisionRow.no.desc())
        ).first()
        if revision is None:
            problems.append(
                f"recipe_hash: no revision of {slug!r} on this hub has content hash "
                f"{doc.recipe_hash}; reproduce the hub's recipe (its /r/{slug} URL) or publish "
                f"your recipe first"
            )
        evidence = session.execute(
            select(ResultRow).where(
                ResultRow.slug == slug, ResultRow.content_hash == doc.result_hash
            )
        ).scalar_one_or_none()
        if evidence is None:
            problems.append(
                f"result_hash: no bench result {doc.result_hash} on recipe {slug!r}; publish "
                f"the reproduction's result.json first (it is the evidence)"
            )
        if problems or revision is None or evidence is None:
            raise _refused(problems)
        reproduced = parse_recipe(json.loads(revision[0].record), slug)
        rows, found = recompute(doc, reproduced, BenchResult.model_validate_json(evidence.body))
        if found:
            raise _refused(found)
        if key_id is not None and signature is not None:
            check_signature(session, token_name, key_id, signature, slug, body)
        digest = doc.content_hash or ""
        seen = session.execute(
            select(ReproductionRow).where(
                ReproductionRow.slug == slug, ReproductionRow.content_hash == digest
            )
        ).scalar_one_or_none()
        if seen is not None:
            return ReproductionAccepted(
                slug=slug,
                revision=seen.revision_no,
                reproduced_revision=seen.reproduced_no,
                verdict=doc.verdict,  # the same content: the same verdict
                content_hash=digest,
                duplicate=True,
                signed_by=seen.key_id,
            )
        when = repo.now_text()
        latest = repo._latest_record(session, row)
        entry = _entry(doc, rows, revision[0].no, evidence, token_name, key_id, when)
        record = latest | {RECORD_KEY: [*(latest.get(RECORD_KEY) or []), entry]}
        record = repo._add_revision(
            session, row, record, notes=f"reproduction {digest} of revision {revision[0].no}"
        )
        session.add(
            ReproductionRow(
                slug=slug,
                content_hash=digest,
                reproduced_no=revision[0].no,
                revision_no=record["revision"]["no"],
                result_hash=doc.result_hash,
                verdict=doc.verdict,
                token_name=token_name,
                created_at=when,
                body=json.dumps(body, ensure_ascii=True),
                key_id=key_id,
                signature=signature,
            )
        )
        return ReproductionAccepted(
            slug=slug,
            revision=record["revision"]["no"],
            reproduced_revision=revision[0].no,
            verdict=doc.verdict,
            content_hash=digest,
            signed_by=key_id,
        )

    return repo.write_transaction(factory, write)


def stored_result(session: Session, slug: str, content_hash: str) -> str | None:
    """A bench result of ``slug`` as it was published (JSON text), None when there is none."""
    if not repo.SLUG_RE.fullmatch(slug):
        return None
    return session.execute(
        select(ResultRow.body).where(ResultRow.slug == slug, ResultRow.content_hash == content_hash)
    ).scalar_one_or_none()


def stored_reproduction(session: Session, slug: str, content_hash: str) -> str | None:
    """A reproduction of ``slug`` as it was posted (JSON text), None when there is none."""
    if not repo.SLUG_RE.fullmatch(slug):
        return None
    return session.execute(
        select(ReproductionRow.body).where(
            ReproductionRow.slug == slug, ReproductionRow.content_hash == content_hash
        )
    ).scalar_one_or_none()


def _rig_label(entry: dict[str, Any]) -> str:
    card, count, power = (
        entry.get("card"),
        entry.get("gpu_count"),
        entry.get("power_limit_w_per_gpu"),
    )
    if not count:
        return str(card or "CPU")
    label = f"{count}× {card or 'unknown card'}"
    return label + (f" at {power:g} W per card" if isinstance(power, int | float) else "")


def page_entries(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The record's reproductions as the recipe page shows them, newest first."""
    entries = [e for e in record.get(RECORD_KEY) or [] if isinstance(e, dict)]
    return [
        {
            **e,
            "rig": _rig_label(e),
            "css": str(e.get("verdict", "")).replace(" ", "-"),
            "evidence_href": (e.get("evidence") or {}).get("href"),
            "points": [p for p in e.get("points") or [] if isinstance(p, dict)],
        }
        for e in reversed(entries)
    ]
