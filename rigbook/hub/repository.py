"""Queries and writes of the hub: revisions numbered without gaps or repeats, filters, results.

Every write runs in one transaction that first locks the recipe's row
(``SELECT … FOR UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` already
serialises writers), reads the latest revision and adds the next one. The
unique constraint on ``(slug, no)`` backs this up: a transaction that loses a
race anyway fails on it and is retried from the start.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import resources
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from rigbook.bench.result import BenchResult
from rigbook.capacity.result import CapacityResult
from rigbook.errors import InputError
from rigbook.hashing import canonical_json
from rigbook.hub.admission import result_problems
from rigbook.hub.capacity import capacity_problems, check_capacity_journal
from rigbook.hub.db import writing
from rigbook.hub.evidence import check_journal
from rigbook.hub.fingerprint import run_fingerprint
from rigbook.hub.leaderboard import write_board
from rigbook.hub.measured import carry_measured, measured_point
from rigbook.hub.models import RecipeRow, ResultRow, RevisionRow
from rigbook.hub.schemas import ResultAccepted, RevisionInfo
from rigbook.hub.verify import check_signature
from rigbook.recipe.hash import recipe_hash
from rigbook.recipe.load import parse_recipe, read_json_text
from rigbook.recipe.schema import PerfPoint, Recipe

WRITE_ATTEMPTS = 20
MAX_DEVICE_COUNT = 1_000_000
LEADERBOARD_LINK = "/api/v1/leaderboard.json"
# The Recipe schema's slug rule: anything else cannot be stored, so it is not looked up (NUL would upset PostgreSQL).
SLUG_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,199}")

T = TypeVar("T")


class RecipeFilters(BaseModel):
    """What ``GET /api/v1/recipes`` and the search page filter on; every field is optional."""

    q: str | None = None
    model: str | None = None
    card_family: str | None = None
    device_count: int | None = None
    engine: str | None = None
    tag: str | None = None
    tier: str | None = None


TOUCHED = "rigbook_touched"


def now_text() -> str:
    """The current UTC time as the record writes times (``YYYY-MM-DD HH:MM:SS.ffffff+00:00``)."""
    return datetime.now(UTC).isoformat(sep=" ")


def clean(text: str | None) -> str:
    """Text safe for any database column: no NUL, no unpaired surrogates (search columns only)."""
    return (text or "").encode("utf-8", "replace").decode("utf-8").replace("\x00", "")


def links_for(slug: str) -> dict[str, str]:
    """The record's links, relative to the hub, as the public record has them."""
    return {
        "self": f"/api/v1/recipes/{slug}.json",
        "alternate": f"/r/{slug}",
        "describedby": "/openapi.json",
    }


def speeds_for(recipe: Recipe) -> dict[str, Any]:
    """Headline speeds derived from the perf points: single-request decode, best prefill (0 when unknown)."""
    single = [
        p.decode_tok_s
        for p in recipe.perf_points
        if p.decode_tok_s is not None and p.concurrency in (None, 1)
    ]
    prefill = [p.prefill_tok_s for p in recipe.perf_points if p.prefill_tok_s is not None]
    return {
        "decode_tok_s": max(single) if single else None,
        "prefill_tok_s": max(prefill) if prefill else 0,
        "leaderboard": LEADERBOARD_LINK,
    }


def storage_problems(recipe: Recipe, record: dict[str, Any]) -> list[str]:
    """What the schema allows but the hub cannot store or hash (one line per problem); ``record`` is the JSON given."""
    problems = []
    for i, hw in enumerate(recipe.hardware):
        if hw.device_count > MAX_DEVICE_COUNT:
            problems.append(
                f"hardware.{i}.device_count: at most {MAX_DEVICE_COUNT}; got {hw.device_count}"
            )
    try:
        canonical_json(record)
    except ValueError as exc:  # NaN/Infinity, or an unpaired surrogate in a string
        problems.append(f"(record): not storable as canonical JSON ({type(exc).__name__}: {exc})")
    return problems


def _row_fields(recipe: Recipe) -> dict[str, Any]:
    def joined(values: list[str]) -> str:
        return "|" + "".join(clean(v).lower() + "|" for v in values if v)

    models = [v for m in recipe.models for v in (m.slug, m.name)]
    cards = [v for h in recipe.hardware for v in (h.card_family, h.card) if v]
    words = [
        recipe.slug,
        recipe.title,
        recipe.summary or "",
        *recipe.tags,
        *models,
        *cards,
        recipe.engine or "",
    ]
    return {
        "title": clean(recipe.title),
        "models": joined(models),
        "card_families": joined(cards),
        "device_count": recipe.gpu_count,
        "engine": clean(recipe.engine).lower() or None,
        "tier": clean(recipe.tier).lower() or None,
        "tags": joined(recipe.tags),
        "search_text": clean(" ".join(words)).lower(),
    }


def write_transaction(factory: sessionmaker[Session], body: Callable[[Session], T]) -> T:
    """Run ``body`` in a write transaction, retrying when a concurrent writer took the same number."""
    for attempt in range(WRITE_ATTEMPTS):
        try:
            with writing(factory) as session:
                return body(session)
        except IntegrityError:
            if attempt == WRITE_ATTEMPTS - 1:
                raise
        except OperationalError as exc:  # PostgreSQL serialisation failure or deadlock
            if attempt == WRITE_ATTEMPTS - 1 or not _transient(exc):
                raise
    raise AssertionError("unreachable")


def _transient(exc: OperationalError) -> bool:
    """A failure that a fresh attempt may not meet. SQLite's "database is locked" is not one: the
    attempt already waited the busy timeout for the lock, and the writer answers 503 (E_DB) then,
    instead of waiting the timeout again for each attempt."""
    text = str(exc.orig).lower()
    return "deadlock" in text or "could not serialize" in text


def _locked_row(session: Session, slug: str) -> RecipeRow | None:
    return session.execute(
        select(RecipeRow).where(RecipeRow.slug == slug).with_for_update()
    ).scalar_one_or_none()


def _latest_record(session: Session, row: RecipeRow) -> dict[str, Any]:
    rev = session.execute(
        select(RevisionRow).where(RevisionRow.slug == row.slug, RevisionRow.no == row.latest_no)
    ).scalar_one()
    return json.loads(rev.record)


def _add_revision(
    session: Session,
    row: RecipeRow | None,
    given: dict[str, Any],
    *,
    notes: str | None,
    keep: bool = False,
) -> dict[str, Any]:
    """Store ``given`` (a record's JSON value, kept as given) as the next revision, with the fields the hub owns set.

    ``keep``: a catalog import, which keeps the record's own revision number, times, links and speeds where it
    has them (only ``revision.content_hash`` becomes the hub's) and adds them where it has not.
    """
    recipe = parse_recipe(given, given.get("slug", "record"))
    digest = recipe_hash(recipe)
    now = now_text()
    record = dict(given)
    if keep:
        updated_at = recipe.updated_at or now
        created_at = recipe.created_at or updated_at
        revision = dict(given["revision"]) if isinstance(given.get("revision"), dict) else {"no": 1}
        revision["content_hash"] = digest
        revision["created_at"] = revision.get("created_at") or updated_at
        record["revision"] = revision
        record.setdefault("links", links_for(recipe.slug))
        record.setdefault("speeds", speeds_for(recipe))
        record.setdefault("updated_at", updated_at)
        record.setdefault("created_at", created_at)
    else:
        given_rev = recipe.revision
        updated_at = now
        created_at = row.created_at if row else now
        record["revision"] = {
            "no": (row.latest_no + 1) if row else 1,
            "commit_sha": given_rev.commit_sha if given_rev else None,
            "content_hash": digest,
            "created_at": now,
            "notes": notes if notes is not None else (given_rev.notes if given_rev else None),
        }
        record["links"] = links_for(recipe.slug)
        record["updated_at"] = updated_at
        record["created_at"] = created_at
        record["speeds"] = speeds_for(recipe)
    revision = record["revision"]
    fields = _row_fields(recipe)
    if row is None:
        session.add(
            RecipeRow(
                slug=recipe.slug,
                latest_no=revision["no"],
                created_at=created_at,
                updated_at=updated_at,
                **fields,
            )
        )
    else:
        row.latest_no, row.updated_at = revision["no"], updated_at
        for key, value in fields.items():
            setattr(row, key, value)
    session.add(
        RevisionRow(
            slug=recipe.slug,
            no=revision["no"],
            content_hash=digest,
            created_at=revision["created_at"],
            notes=revision.get("notes"),
            record=json.dumps(record, ensure_ascii=True),
        )
    )
    session.flush()
    write_board(session, recipe, revision["no"])
    touch(session, recipe.slug)
    return record


def touch(session: Session, slug: str) -> None:
    """Mark ``slug`` as changed by this transaction: its answers are prepared before it commits
    (:mod:`rigbook.hub.prepared`)."""
    session.info.setdefault(TOUCHED, set()).add(slug)


class Stored(BaseModel):
    """A recipe write's outcome: the record as served, and whether it was already the latest revision."""

    record: dict[str, Any]
    unchanged: bool = False


def put_recipe(factory: sessionmaker[Session], given: dict[str, Any]) -> Stored:
    """Store the record ``given`` as a new recipe or as its next revision, carrying the measured points of the
    revision it replaces. When that revision has the same content hash, nothing is written and it is returned."""
    recipe = parse_recipe(given, given.get("slug", "record"))

    def body(session: Session) -> Stored:
        row = _locked_row(session, recipe.slug)
        if row is None:
            return Stored(record=_add_revision(session, None, given, notes=None))
        latest = _latest_record(session, row)
        carried = carry_measured(latest, recipe)
        record = given
        if (
            carried.points
        ):  # after the record's own points; a record without perf_points gains the key only then
            record = given | {"perf_points": [*(given.get("perf_points") or []), *carried.points]}
        if latest.get("reproductions"):  # only published ones add them (rigbook.hub.reproductions)
            record = record | {"reproductions": latest["reproductions"]}
        if recipe_hash(parse_recipe(record, recipe.slug)) == (latest.get("revision") or {}).get(
            "content_hash"
        ):
            return Stored(record=latest, unchanged=True)
        own_notes = recipe.revision.notes if recipe.revision else None
        notes = " ".join(n for n in (own_notes, carried.note()) if n) or None
        return Stored(record=_add_revision(session, row, record, notes=notes))

    return write_transaction(factory, body)


def import_record(factory: sessionmaker[Session], given: dict[str, Any]) -> bool:
    """Store the record ``given`` as it is (its revision number and times) unless its slug exists; True when stored."""
    return bool(import_records(factory, [given]))


def import_records(factory: sessionmaker[Session], records: list[dict[str, Any]]) -> list[str]:
    """Store each record as :func:`import_record` does, all in one transaction (one commit for a large
    import); returns the slugs stored."""
    slugs = [parse_recipe(given, given.get("slug", "record")).slug for given in records]

    def body(session: Session) -> list[str]:
        stored = []
        for slug, given in zip(slugs, records, strict=True):
            if _locked_row(session, slug) is None:
                _add_revision(session, None, given, notes=None, keep=True)
                stored.append(slug)
        return stored

    return write_transaction(factory, body)


def catalog_records() -> list[dict[str, Any]]:
    """The built-in recipes as their files' JSON values, by file name.

    Read from the files rather than :func:`rigbook.recipe.catalog.list_recipes`: a parsed recipe writes a given
    ``207`` back as ``207.0``, and the hub serves an imported record as it was given.
    """
    folder = resources.files("rigbook.recipe") / "catalog"
    return [
        read_json_text(entry.read_text(encoding="utf-8"), entry.name)
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".json")
    ]


def load_catalog(factory: sessionmaker[Session]) -> list[str]:
    """Import every built-in recipe the hub lacks; returns the slugs imported (none on a second run)."""
    return [r["slug"] for r in catalog_records() if import_record(factory, r)]


def get_record_text(session: Session, slug: str) -> tuple[int, str, str] | None:
    """``(revision no, content hash, record as JSON text)`` of the latest revision of ``slug``, to be served
    without decoding and encoding it again."""
    if not SLUG_RE.fullmatch(slug):
        return None
    query = (
        select(RevisionRow.no, RevisionRow.content_hash, RevisionRow.record)
        .where(RevisionRow.slug == slug)
        .join(
            RecipeRow,
            (RecipeRow.slug == RevisionRow.slug) & (RecipeRow.latest_no == RevisionRow.no),
        )
    )
    found = session.execute(query).one_or_none()
    return (found[0], found[1], found[2]) if found is not None else None


def get_record(session: Session, slug: str) -> dict[str, Any] | None:
    """The served record of ``slug``: its latest revision."""
    found = get_record_text(session, slug)
    return json.loads(found[2]) if found is not None else None


def list_records(
    session: Session, filters: RecipeFilters, *, limit: int | None, offset: int = 0
) -> tuple[int, list[dict[str, Any]]]:
    """``(total matching, one page of records)``, ordered by slug."""
    query = select(RecipeRow.slug)
    if filters.q:
        for word in clean(filters.q).lower().split():
            query = query.where(RecipeRow.search_text.contains(word, autoescape=True))
    for column, value in (
        (RecipeRow.models, filters.model),
        (RecipeRow.card_families, filters.card_family),
        (RecipeRow.tags, filters.tag),
    ):
        if value:
            query = query.where(column.contains(f"|{clean(value).lower()}|", autoescape=True))
    if filters.engine:
        query = query.where(RecipeRow.engine == clean(filters.engine).lower())
    if filters.tier:
        query = query.where(RecipeRow.tier == clean(filters.tier).lower())
    if filters.device_count is not None:
        query = query.where(RecipeRow.device_count == filters.device_count)
    total = session.execute(select(func.count()).select_from(query.subquery())).scalar_one()
    page = (
        select(RevisionRow.record)
        .join(
            RecipeRow,
            (RecipeRow.slug == RevisionRow.slug) & (RecipeRow.latest_no == RevisionRow.no),
        )
        .where(RecipeRow.slug.in_(query))
        .order_by(RecipeRow.slug)
        .offset(offset)
        .limit(limit)
    )
    return total, [json.loads(t) for t in session.execute(page).scalars()]


def all_records(session: Session) -> list[dict[str, Any]]:
    """The latest record of every recipe."""
    return list_records(session, RecipeFilters(), limit=None)[1]


def revisions(session: Session, slug: str) -> list[RevisionInfo] | None:
    """The history of ``slug``, oldest first (None when there is no such recipe)."""
    if not SLUG_RE.fullmatch(slug):
        return None
    rows = (
        session.execute(
            select(RevisionRow).where(RevisionRow.slug == slug).order_by(RevisionRow.no)
        )
        .scalars()
        .all()
    )
    if not rows:
        return None
    return [
        RevisionInfo(no=r.no, content_hash=r.content_hash, created_at=r.created_at, notes=r.notes)
        for r in rows
    ]


def add_result(
    factory: sessionmaker[Session],
    slug: str,
    result: BenchResult,
    token_name: str,
    given: object = None,
    signed: tuple[str, str] | None = None,
) -> ResultAccepted:
    """Join a result's perf points to ``slug`` as ``measured`` in a new revision (once per result).

    The result is checked against the revision its points would join, in the same transaction: a refusal
    (E_RESULT_REFUSED) lists every reason. ``given`` is the JSON as posted: its hash is checked on
    it, and it is what is stored.
    """
    journal = check_journal(result)
    return _join_measured(
        factory,
        slug,
        digest=result.content_hash or "",
        points=result.perf_points,
        verified=set(journal.verified),
        problems=lambda recipe: result_problems(result, recipe, given) + journal.problems,
        body=given if isinstance(given, dict) else result.model_dump(mode="json"),
        what="bench result",
        token_name=token_name,
        signed=signed,
    )


def add_capacity(
    factory: sessionmaker[Session],
    slug: str,
    result: CapacityResult,
    token_name: str,
    given: object = None,
    signed: tuple[str, str] | None = None,
) -> ResultAccepted:
    """Join a capacity result's users_at_slo point to ``slug`` as ``measured`` (once per result),
    after the checks of :mod:`rigbook.hub.capacity`; a refusal (E_RESULT_REFUSED) lists every reason.
    ``given`` is the JSON as posted: its hash is checked on it, and it is what is stored."""
    journal = check_capacity_journal(result)
    return _join_measured(
        factory,
        slug,
        digest=result.content_hash or "",
        points=result.perf_points,
        verified=set(range(len(result.perf_points))) if journal.verified else set(),
        problems=lambda recipe: capacity_problems(result, recipe, given) + journal.problems,
        body=given if isinstance(given, dict) else result.model_dump(mode="json"),
        what="capacity result",
        token_name=token_name,
        signed=signed,
    )


def _join_measured(
    factory: sessionmaker[Session],
    slug: str,
    *,
    digest: str,
    points: list[PerfPoint],
    verified: set[int],
    problems: Callable[[Recipe], list[str]],
    body: dict[str, Any],
    what: str,
    token_name: str,
    signed: tuple[str, str] | None,
) -> ResultAccepted:
    fingerprint = run_fingerprint(body)
    key_id, signature = signed if signed is not None else (None, None)

    def write(session: Session) -> ResultAccepted:
        row = _locked_row(session, slug) if SLUG_RE.fullmatch(slug) else None
        if row is None:
            raise InputError("E_RECIPE_NOT_FOUND", f"no recipe {slug!r} on this hub")
        latest = _latest_record(session, row)
        found = problems(parse_recipe(latest, slug))
        if found:
            raise InputError(
                "E_RESULT_REFUSED",
                f"the {what} cannot be published: {len(found)} problem(s)",
                details=found,
            )
        if key_id is not None and signature is not None:
            check_signature(session, token_name, key_id, signature, slug, body)
        seen = session.execute(
            select(ResultRow).where(ResultRow.slug == slug, ResultRow.content_hash == digest)
        ).scalar_one_or_none()
        if seen is not None:
            return ResultAccepted(
                slug=slug,
                revision=seen.revision_no,
                points_added=0,
                content_hash=digest,
                duplicate=True,
            )
        same_run = session.execute(
            select(ResultRow.slug, ResultRow.content_hash).where(
                ResultRow.fingerprint == fingerprint
            )
        ).first()
        if same_run is not None:
            raise InputError(
                "E_RESULT_REPLAYED",
                f"the {what} is a run this hub already holds: result {same_run[1]} on recipe "
                f"{same_run[0]!r} has the same requests (fingerprint {fingerprint}); one run counts "
                f"once, on one recipe",
            )
        measured = [
            measured_point(
                p, digest, verified=i in verified, published_by=token_name, signed_by=key_id
            )
            for i, p in enumerate(points)
        ]
        record = latest | {"perf_points": [*(latest.get("perf_points") or []), *measured]}
        record = _add_revision(session, row, record, notes=f"measured points from {what} {digest}")
        no = record["revision"]["no"]
        session.add(
            ResultRow(
                slug=slug,
                content_hash=digest,
                revision_no=no,
                token_name=token_name,
                created_at=record["updated_at"],
                body=json.dumps(body, ensure_ascii=True),
                fingerprint=fingerprint,
                key_id=key_id,
                signature=signature,
            )
        )
        return ResultAccepted(
            slug=slug,
            revision=no,
            points_added=len(measured),
            content_hash=digest,
            verified=len(verified),
        )

    return write_transaction(factory, write)


def mark_signer_revoked(session: Session, slug: str, key_id: str, when: str) -> int:
    """In a write transaction: a new revision of ``slug`` whose measured points signed by ``key_id``
    carry ``signer_revoked_at``; the number of points marked (0: no revision added)."""
    row = _locked_row(session, slug)
    if row is None:
        return 0
    latest = _latest_record(session, row)
    points, marked = [], 0
    for point in latest.get("perf_points") or []:
        if (
            isinstance(point, dict)
            and point.get("signed_by") == key_id
            and "signer_revoked_at" not in point
        ):
            point = point | {"signer_revoked_at": when}
            marked += 1
        points.append(point)
    reproductions, judged = [], 0  # reproductions it signed (rigbook.hub.reproductions) too
    for entry in latest.get("reproductions") or []:
        if (
            isinstance(entry, dict)
            and entry.get("signed_by") == key_id
            and "signer_revoked_at" not in entry
        ):
            entry = entry | {"signer_revoked_at": when}
            judged += 1
        reproductions.append(entry)
    if judged:
        latest = latest | {"reproductions": reproductions}
    if marked or judged:
        _add_revision(
            session,
            row,
            latest | {"perf_points": points},
            notes=f"{marked} measured point(s) signed by {key_id}, revoked at {when}",
        )
    return marked
