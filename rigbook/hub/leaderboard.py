"""The leaderboard: a table (``board``) written with every revision, read by index a page at a time.

Each recipe revision's numbers are turned into board rows in the transaction
that stores the revision (:func:`write_board`), and ranked there: a number is
ranked only against like numbers, those with the same ``metric`` and ``scope``
(the fixed terms of the number, e.g. an SLO and a bench profile), model,
hardware and concurrency, and measured numbers only against measured ones.
A kind of number joins the board by registering a :class:`Metric` and a
function that finds its points in a recipe (:func:`register`).

``hub_state.board_version`` changes with every board write, so every worker
and instance on one database agrees on the board's ETag and on what a cached
page may be reused for. ``hub_state`` also keeps how many numbers the default
board has (:func:`default_total`), so a write renders that board's first page
without counting every number.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any, Final, Literal, cast

from pydantic import BaseModel, Field, field_validator
from sqlalchemy import CursorResult, Select, delete, func, insert, select, text, update
from sqlalchemy.orm import Session

from rigbook.hub.admission import MEASURED
from rigbook.hub.models import BoardRow, StateRow
from rigbook.recipe.schema import PerfPoint, Recipe

VERIFIED: Final = "consistent-with-journal"
UNVERIFIED: Final = "measured-unverified"
CLAIMED: Final = "claimed"
Evidence = Literal["consistent-with-journal", "measured-unverified", "claimed"]
EvidenceFilter = Literal["consistent-with-journal", "measured-unverified", "claimed", "measured"]
VERSION_KEY = "board_version"
DEFAULT_METRIC = "decode_tok_s"
# How many numbers the default board has, and the version that count is of (default_total).
COUNT_KEY = "board_default_count"
COUNTED_AT_KEY = "board_default_counted_at"
# Up to this many partitions of one metric, model and hardware, a write reranks each on its own
# (each statement reads only its partition's rows); past it, all of them in one statement.
RERANK_ONE_BY_ONE = 8


class Metric(BaseModel):
    """A kind of number the board ranks."""

    name: str
    label: str
    unit: str
    higher_is_better: bool = True


class BoardPoint(BaseModel):
    """One number of a recipe, before it is stored and ranked."""

    metric: str
    scope: str = Field(
        default="", description="The fixed terms the number holds under; '' when none."
    )
    concurrency: int = 0
    value: float
    evidence: Evidence
    published_by: str | None = None
    signed_by: str | None = None
    signer_revoked_at: str | None = None
    claimed_by: str | None = None
    notes: str | None = None
    per_request_decode_tok_s_median: float | None = None
    conditions: dict[str, Any] = Field(default_factory=dict)


class BoardItem(BaseModel):
    """One number as the board serves it: where it came from, who published it, its rank and conditions."""

    recipe: str
    revision: int
    title: str
    model: str
    model_name: str
    hardware: str
    card: str
    device_count: int
    metric: str
    scope: str
    concurrency: int
    value: float
    rank: int = Field(
        description="1 is best among numbers of the same metric, scope, model, hardware, "
        "concurrency and kind (measured or claimed)."
    )
    evidence: Evidence
    published_by: str | None
    signed_by: str | None = Field(
        default=None, description="The key that signed the point's result; None when unsigned."
    )
    signer_revoked_at: str | None = Field(
        default=None, description="When that key was revoked; None while it stands."
    )
    claimed_by: str | None
    notes: str | None
    per_request_decode_tok_s_median: float | None
    conditions: dict[str, Any]


class BoardFilters(BaseModel):
    """What ``GET /api/v1/leaderboard.json`` filters on."""

    metric: str = DEFAULT_METRIC
    scope: str | None = None
    model: str | None = None
    card: str | None = None
    device_count: int | None = None
    concurrency: int | None = None
    evidence: EvidenceFilter | None = None
    recipe: str | None = None

    @field_validator("scope", "model", "card", "recipe")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        # A NUL can match nothing stored, and PostgreSQL refuses it in a query parameter.
        return None if value is None else value.replace("\x00", "")


def is_measured(point: PerfPoint) -> bool:
    """Measured by a bench run the hub checked (anything else is a claim)."""
    return point.claimed_by == MEASURED


def evidence_of(point: PerfPoint) -> Evidence:
    """``consistent-with-journal`` when the hub recomputed the point from its requests, ``measured-unverified``
    for another measured point, ``claimed`` for the rest."""
    if not is_measured(point):
        return CLAIMED
    return VERIFIED if (point.model_extra or {}).get("evidence") == VERIFIED else UNVERIFIED


def signer(point: PerfPoint) -> str | None:
    """The key that signed a measured point's result, None for an unsigned or claimed point."""
    kid = (point.model_extra or {}).get("signed_by") if is_measured(point) else None
    return kid if isinstance(kid, str) else None


def signer_revoked_at(point: PerfPoint) -> str | None:
    """When the key that signed a measured point's result was revoked, None while it stands."""
    when = (point.model_extra or {}).get("signer_revoked_at") if is_measured(point) else None
    return when if isinstance(when, str) else None


def published_by(point: PerfPoint) -> str | None:
    """Who published a measured point (the hub's token name), or who claims a claimed one."""
    if is_measured(point):
        who = (point.model_extra or {}).get("published_by")
        return who if isinstance(who, str) else None
    return point.claimed_by


def effective_conditions(recipe: Recipe, point: PerfPoint) -> dict[str, Any]:
    """The conditions of ``point``, unknown ones left out.

    A measured point has exactly what its result recorded: filling a gap from the recipe would show the recipe's
    card or power limit for a run that never had them. A claim has the recipe's, overridden by the point's own.
    """
    own = (
        point.conditions.model_dump(mode="json", exclude_none=True)
        if point.conditions is not None
        else {}
    )
    if is_measured(point):
        return own
    ext = recipe.ext
    base: dict[str, Any] = {
        "gpu_count": recipe.gpu_count,
        "card": recipe.hardware[0].card if recipe.hardware else "CPU",
        "power_limit_w_per_gpu": ext.power_limit_w_per_gpu,
        "engine": recipe.engine,
        "engine_version": ext.engine_version,
        "quant": recipe.models[0].quant if recipe.models else None,
        "kv_cache_dtype": ext.kv_cache_dtype,
        "speculative_method": ext.speculative.method if ext.speculative else None,
    }
    return {k: v for k, v in (base | own).items() if v is not None}


def condition_pairs(conditions: dict[str, Any]) -> list[tuple[str, Any]]:
    """Conditions as flat ``(name, value)`` pairs for display (``sampling.temperature`` …)."""
    pairs = []
    for key, value in conditions.items():
        if isinstance(value, dict):
            pairs += [(f"{key}.{k}", v) for k, v in value.items()]
        else:
            pairs.append((key, value))
    return pairs


def hardware_label(recipe: Recipe) -> tuple[str, str, int]:
    """``(label, card, device count)``, e.g. ``("2x RTX PRO 6000 Blackwell Max-Q", …, 2)``; CPU when none."""
    if not recipe.hardware:
        return "CPU", "CPU", 0
    card = recipe.hardware[0].card
    return f"{recipe.gpu_count}x {card}", card, recipe.gpu_count


def is_capacity(point: PerfPoint) -> bool:
    """A `rigbook capacity` point (users at an SLO): ranked on its own board, not as tok/s."""
    return point.users_at_slo is not None or point.slo is not None


SCOPE_JOIN: Final = " · profile "
MAX_SCOPE: Final = 300  # board.scope is a String(300)


def slo_scope(slo: str | None, profile: str | None) -> str:
    """The board scope of a users-at-SLO number: the canonical SLO and the bench profile, e.g.
    ``per_user_tok_s>=5,ttft_p90_ms<=5000,error_rate<=0 · profile quick v2``. Term order, spaces
    and units do not change it (:func:`rigbook.capacity.slo.canonical_slo`); an SLO this version
    cannot read is kept as written, and so ranked only against the same text."""
    from rigbook.capacity.slo import canonical_slo

    text = (slo or "").strip()
    canon = canonical_slo(text) or " ".join(text.split()) or "no SLO stated"
    scope = f"{canon}{SCOPE_JOIN}{' '.join((profile or 'not stated').split())}"
    if len(scope) > MAX_SCOPE:  # the column's width: a long claim keeps a prefix and its digest
        digest = hashlib.sha256(scope.encode()).hexdigest()[:16]
        scope = f"{scope[: MAX_SCOPE - 18]}… {digest}"
    return scope


def canonical_scope(scope: str) -> str:
    """A users-at-SLO scope as a reader may write it, made canonical (the SLO part normalised)."""
    slo, sep, profile = scope.partition(SCOPE_JOIN)
    return slo_scope(slo, profile) if sep else scope


def users_points(recipe: Recipe) -> list[BoardPoint]:
    """Users at an SLO, one number per capacity point, scoped by its SLO and profile."""
    found = []
    for point in recipe.perf_points:
        if point.users_at_slo is None:
            continue
        said = [point.notes] if point.notes else []
        if point.users_at_slo_lower_bound:
            said.append("a lower bound: the search found no level that broke the SLO")
        if point.slo_binding:
            said.append(f"binding term: {point.slo_binding}")
        found.append(
            BoardPoint(
                metric="users_at_slo",
                scope=slo_scope(point.slo, point.slo_profile),
                value=float(point.users_at_slo),
                evidence=evidence_of(point),
                published_by=published_by(point),
                signed_by=signer(point),
                signer_revoked_at=signer_revoked_at(point),
                claimed_by=point.claimed_by,
                notes="; ".join(said) or None,
                per_request_decode_tok_s_median=point.per_request_decode_tok_s_median,
                conditions=effective_conditions(recipe, point),
            )
        )
    return found


def decode_points(recipe: Recipe) -> list[BoardPoint]:
    """Aggregate decode tok/s at each concurrency: every point with both, finite and positive
    (not a capacity point's: its concurrency is the answer of a search, ranked as users)."""
    found = []
    for point in recipe.perf_points:
        if is_capacity(point):
            continue
        value, c = point.decode_tok_s, point.concurrency
        if value is None or c is None or not math.isfinite(value) or value <= 0:
            continue
        found.append(
            BoardPoint(
                metric="decode_tok_s",
                concurrency=c,
                value=value,
                evidence=evidence_of(point),
                published_by=published_by(point),
                signed_by=signer(point),
                signer_revoked_at=signer_revoked_at(point),
                claimed_by=point.claimed_by,
                notes=point.notes,
                per_request_decode_tok_s_median=point.per_request_decode_tok_s_median,
                conditions=effective_conditions(recipe, point),
            )
        )
    return found


METRICS: dict[str, Metric] = {}
FINDERS: dict[str, Callable[[Recipe], list[BoardPoint]]] = {}


def register(metric: Metric, finder: Callable[[Recipe], list[BoardPoint]]) -> None:
    """Add a kind of number to the board: ``finder`` gives a recipe's points of ``metric``.

    A board built before the registration lacks the new points until :func:`rebuild_board` runs
    (a migration that registers a metric calls it).
    """
    METRICS[metric.name] = metric
    FINDERS[metric.name] = finder


register(Metric(name="decode_tok_s", label="decode tok/s (aggregate)", unit="tok/s"), decode_points)
register(
    Metric(name="users_at_slo", label="users served at an SLO (rigbook capacity)", unit="users"),
    users_points,
)


PARTITION = ("metric", "scope", "model", "card", "device_count", "concurrency", "measured")


def _partition(row: BoardRow) -> tuple:
    return tuple(getattr(row, k) for k in PARTITION)


def _rerank(session: Session, key: tuple) -> None:
    """Number one partition 1, 2, … best first (ties: by recipe, then by row), in one statement."""
    metric, scope, model, card, device_count, concurrency, measured = key
    order = "DESC" if (METRICS[metric].higher_is_better if metric in METRICS else True) else "ASC"
    session.execute(
        text(
            f"UPDATE board SET rank = ranked.n FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY value {order}, slug, id) "
            "AS n FROM board WHERE metric = :metric AND scope = :scope AND model = :model AND card = :card "
            "AND device_count = :device_count AND concurrency = :concurrency AND measured = :measured) AS ranked "
            "WHERE board.id = ranked.id AND board.rank <> ranked.n"
        ),
        {
            "metric": metric,
            "scope": scope,
            "model": model,
            "card": card,
            "device_count": device_count,
            "concurrency": concurrency,
            "measured": measured,
        },
    )


def _rerank_group(session: Session, metric: str, model: str, card: str, device_count: int) -> None:
    """Number every partition of one metric, model and hardware in one statement (as :func:`_rerank`
    does one): for a recipe with many partitions, one statement instead of one per partition."""
    order = "DESC" if (METRICS[metric].higher_is_better if metric in METRICS else True) else "ASC"
    session.execute(
        text(
            "UPDATE board SET rank = ranked.n FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY scope, "
            f"concurrency, measured ORDER BY value {order}, slug, id) AS n FROM board "
            "WHERE metric = :metric AND model = :model AND card = :card "
            "AND device_count = :device_count) AS ranked "
            "WHERE board.id = ranked.id AND board.rank <> ranked.n"
        ),
        {"metric": metric, "model": model, "card": card, "device_count": device_count},
    )


def _rerank_touched(session: Session, touched: set[tuple]) -> None:
    """Rerank the partitions a write touched: one by one when few, else all of their metric, model and
    hardware at once (a recipe of thousands of points held the write lock for one statement per
    partition, and other writers waited past their timeout)."""
    groups: dict[tuple, list[tuple]] = {}
    for key in touched:
        metric, _scope, model, card, device_count, _concurrency, _measured = key
        groups.setdefault((metric, model, card, device_count), []).append(key)
    for group, keys in groups.items():
        if len(keys) <= RERANK_ONE_BY_ONE:
            for key in keys:
                _rerank(session, key)
        else:
            _rerank_group(session, *group)


def _put_state(session: Session, key: str, value: Any, first: int) -> None:
    """Set the counter ``key`` to ``value`` (an expression on its column adds in the statement, so
    a concurrent writer's change is kept); ``first`` when there is none yet."""
    # An UPDATE's result is a CursorResult; Session.execute is typed as returning Result.
    changed = cast(
        "CursorResult[Any]",
        session.execute(update(StateRow).where(StateRow.key == key).values(value=value)),
    ).rowcount
    if not changed:
        session.add(StateRow(key=key, value=first))
        session.flush()


def _state(session: Session, key: str) -> int | None:
    return session.scalar(select(StateRow.value).where(StateRow.key == key))


def _bump_version(session: Session) -> None:
    _put_state(session, VERSION_KEY, StateRow.value + 1, 1)


def _default_rows(session: Session) -> int:
    board = BoardRow.__table__
    query = select(func.count()).select_from(board).where(board.c.metric == DEFAULT_METRIC)
    return session.scalar(query) or 0


def _keep_count(session: Session, change: int) -> None:
    """Keep the count of the default board's numbers for the version this write just made:
    moved by ``change`` when it was kept for the version before, else counted whole (the first
    write, or a board that code which does not keep it wrote). After the version's bump, so
    concurrent writers come here one at a time, each seeing the one before."""
    version = board_version(session)
    if _state(session, COUNTED_AT_KEY) != version - 1:
        recount(session)
        return
    _put_state(session, COUNT_KEY, StateRow.value + change, change)
    _put_state(session, COUNTED_AT_KEY, version, version)


def recount(session: Session) -> None:
    """Count the default board's numbers whole, for the current version (a hub starting: a
    migration may have changed the board without keeping the count)."""
    whole, version = _default_rows(session), board_version(session)
    _put_state(session, COUNT_KEY, whole, whole)
    _put_state(session, COUNTED_AT_KEY, version, version)


def default_total(session: Session) -> int:
    """How many numbers the default board (metric ``decode_tok_s``, no filter) has: the count its
    writes keep for the current version, else counted."""
    if _state(session, COUNTED_AT_KEY) == board_version(session):
        return _state(session, COUNT_KEY) or 0
    return _default_rows(session)


def write_board(session: Session, recipe: Recipe, revision_no: int) -> None:
    """Replace ``recipe``'s board rows with those of revision ``revision_no`` and rerank what changed."""
    old = session.execute(select(BoardRow).where(BoardRow.slug == recipe.slug)).scalars().all()
    touched = {_partition(r) for r in old}
    session.execute(delete(BoardRow).where(BoardRow.slug == recipe.slug))
    model = recipe.models[0] if recipe.models else None
    label, card, count = hardware_label(recipe)
    rows: list[dict[str, Any]] = []
    for finder in FINDERS.values():
        for p in finder(recipe):
            entry = {
                "title": recipe.title,
                "model_name": model.name if model else recipe.title,
                "hardware": label,
                "claimed_by": p.claimed_by,
                "signed_by": p.signed_by,
                "signer_revoked_at": p.signer_revoked_at,
                "notes": p.notes,
                "per_request_decode_tok_s_median": p.per_request_decode_tok_s_median,
                "conditions": p.conditions,
            }
            row = {
                "slug": recipe.slug,
                "revision_no": revision_no,
                "metric": p.metric,
                "scope": p.scope,
                "model": model.slug if model else recipe.slug,
                "card": card,
                "device_count": count,
                "concurrency": p.concurrency,
                "measured": p.evidence != CLAIMED,
                "evidence": p.evidence,
                "published_by": p.published_by,
                "value": p.value,
                "rank": 0,
                "entry": json.dumps(entry, ensure_ascii=True),
            }
            rows.append(row)
            touched.add(tuple(row[k] for k in PARTITION))
    if rows:  # one statement for all of them, not one per row through the ORM's flush
        session.execute(insert(BoardRow), rows)
    _rerank_touched(session, touched)
    _bump_version(session)
    mine = sum(1 for r in rows if r["metric"] == DEFAULT_METRIC)
    _keep_count(session, mine - sum(1 for r in old if r.metric == DEFAULT_METRIC))


def board_version(session: Session) -> int:
    """The board's version: changes with every write, the same for every worker on this database."""
    return (
        session.execute(
            select(StateRow.value).where(StateRow.key == VERSION_KEY)
        ).scalar_one_or_none()
        or 0
    )


def _board_query(filters: BoardFilters) -> Select[tuple[int]]:
    """The ids of every row that matches ``filters``, in board order: grouped by model, hardware,
    scope and concurrency, measured first, then by rank (a total order: ranks are unique within a
    group, so any prefix of it is the same rows in the same order)."""
    board = BoardRow.__table__
    query = select(board.c.id).where(board.c.metric == filters.metric)
    if filters.scope is not None:
        query = query.where(board.c.scope == filters.scope)
    if filters.model:
        query = query.where(board.c.model == filters.model)
    if filters.card:
        query = query.where(
            func.lower(board.c.card).contains(filters.card.lower(), autoescape=True)
        )
    if filters.device_count is not None:
        query = query.where(board.c.device_count == filters.device_count)
    if filters.concurrency is not None:
        query = query.where(board.c.concurrency == filters.concurrency)
    if filters.evidence == "measured":
        query = query.where(board.c.measured.is_(True))
    elif filters.evidence is not None:
        query = query.where(board.c.evidence == filters.evidence)
    if filters.recipe:
        query = query.where(board.c.slug == filters.recipe)
    order = (board.c.model, board.c.card, board.c.device_count, board.c.scope, board.c.concurrency)
    return query.order_by(*order, board.c.measured.desc(), board.c.rank)


def board_ids(session: Session, filters: BoardFilters) -> list[int]:
    """The whole board of one filter key in one query of ids only (a page of it is a slice, with
    no deep ``OFFSET``; :func:`board_items` reads it)."""
    return list(session.scalars(_board_query(filters)))


def board_head(session: Session, limit: int) -> tuple[int, list[int]]:
    """``(total, the first limit ids)`` of the default board: its first page, in the order
    :func:`board_ids` gives, without reading every id (a write renders it)."""
    return default_total(session), list(session.scalars(_board_query(BoardFilters()).limit(limit)))


def board_etag(version: int, filters: BoardFilters, limit: int, offset: int) -> str:
    """The ETag of one page of the JSON board: the write version and a digest of what was asked
    (weak: the page's ``next`` link, so its bytes, differ with the host asked)."""
    query = json.dumps([filters.model_dump(), limit, offset])
    return f'W/"{version}-{hashlib.sha256(query.encode()).hexdigest()[:16]}"'


def board_items(session: Session, ids: list[int]) -> list[BoardItem]:
    """The rows ``ids`` (a page of :func:`board_ids`) as the board serves them, in that order: one
    read by primary key."""
    if not ids:
        return []
    board = BoardRow.__table__
    found = {row.id: row for row in session.execute(select(board).where(board.c.id.in_(ids)))}
    return [_item(found[i]) for i in ids if i in found]


def _item(row: Any) -> BoardItem:
    entry = json.loads(row.entry)
    return BoardItem(
        recipe=row.slug,
        revision=row.revision_no,
        title=entry["title"],
        model=row.model,
        model_name=entry["model_name"],
        hardware=entry["hardware"],
        card=row.card,
        device_count=row.device_count,
        metric=row.metric,
        scope=row.scope,
        concurrency=row.concurrency,
        value=row.value,
        rank=row.rank,
        evidence=cast(Evidence, row.evidence),  # the board only stores evidence_of's values
        published_by=row.published_by,
        signed_by=entry.get("signed_by"),
        signer_revoked_at=entry.get("signer_revoked_at"),
        claimed_by=entry["claimed_by"],
        notes=entry["notes"],
        per_request_decode_tok_s_median=entry["per_request_decode_tok_s_median"],
        conditions=entry["conditions"],
    )


def rebuild_board(session: Session, recipes: list[tuple[Recipe, int]]) -> None:
    """Write the board of every ``(recipe, revision no)`` afresh (after a migration that changes what it holds)."""
    session.execute(delete(BoardRow))
    session.execute(delete(StateRow).where(StateRow.key == COUNTED_AT_KEY))  # counted afresh
    for recipe, no in recipes:
        write_board(session, recipe, no)
