"""`rigbook reproduce --publish` and `rigbook publish FOLDER/reproduction.json`: the bench result as
evidence, then the reproduction of the recipe revision, each signed when a key is configured.

Nothing is lost when the hub refuses: every file stays in the reproduction's folder, and the
error keeps its code and says how to publish the folder again.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field

from rigbook.bench.result import bench_from
from rigbook.errors import InputError, RigbookError
from rigbook.hub.client import HubClient
from rigbook.hub.signing import load_key, public_key_of, sign
from rigbook.reproduce.document import build_document
from rigbook.reproduction import Reproduction, Verdict
from rigbook.result_file import read_file
from rigbook.results import load_result

FILE_NAME = "reproduction.json"


class ReproductionPublished(BaseModel):
    """What publishing a reproduction did on the hub."""

    slug: str
    result_revision: int = Field(description="The revision the result's measured points joined.")
    result_duplicate: bool = Field(description="The result was on the hub already.")
    revision: int = Field(description="The revision the reproduction first shows in.")
    reproduced_revision: int = Field(description="The revision whose claims it judged.")
    verdict: Verdict
    content_hash: str
    duplicate: bool = False
    signed_by: str | None = None
    url: str = Field(description="The recipe's page.")
    json_url: str = Field(description="The recipe's JSON, its reproductions included.")


def _result_path(rep: Reproduction, where: Path) -> Path:
    """The result file: as recorded, else beside the reproduction.json (a folder moved or given
    relative to another working directory)."""
    recorded = Path(rep.result)
    if recorded.is_absolute() and recorded.is_file():
        return recorded
    return where / recorded.name


def publish_reproduction(
    rep: Reproduction,
    hub: str,
    token: str | None,
    *,
    folder: Path | None = None,
    signing: bool = True,
) -> ReproductionPublished:
    """Publish ``rep``'s bench result to its recipe, then ``rep`` as a reproduction of the revision
    it judged; ``folder`` is where its files are (default: the folder it records)."""
    where = folder or Path(rep.folder)
    if rep.verdict_error is not None or rep.cut_short:
        raise InputError(
            "E_INPUT",
            "this reproduction's bench does not count (failed requests or stopped early); "
            "nothing was published",
            "Run `rigbook reproduce` again and publish the run that completes.",
        )
    if rep.recipe_hash is None:
        raise InputError(
            "E_INPUT",
            f"{where / FILE_NAME} does not say which recipe revision it judged (no recipe_hash)",
            "Run `rigbook reproduce --publish` with this version of rigbook.",
        )
    evidence_file = read_file(_result_path(rep, where))
    result = bench_from(evidence_file)
    written = evidence_file.written
    client = HubClient(hub, token)
    private = load_key() if signing else None
    document = build_document(
        rep.recipe,
        rep.recipe_hash,
        result,
        profile=rep.profile,
        levels=rep.levels,
        max_tokens=rep.max_tokens,
        rows=rep.rows,
        assumed=rep.assumed,
    )
    body = document.model_dump(mode="json")
    sent = json.dumps(body, ensure_ascii=False).encode()
    try:
        evidence = client.publish_result(
            rep.recipe, written, sign(private, rep.recipe, evidence_file.data) if private else None
        )
        accepted = client.publish_reproduction(
            rep.recipe, sent, sign(private, rep.recipe, body) if private else None
        )
    except RigbookError as exc:
        raise RigbookError(
            exc.code,
            f"{exc.message}; nothing is lost: the result, comparison and report stay in {where}",
            " ".join(
                t
                for t in (
                    exc.remedy,
                    f"Then publish the folder again: rigbook publish {where / FILE_NAME} --hub {hub}",
                )
                if t
            ),
            details=exc.details,
        ) from None
    return ReproductionPublished(
        slug=rep.recipe,
        result_revision=evidence.revision,
        result_duplicate=evidence.duplicate,
        revision=accepted.revision,
        reproduced_revision=accepted.reproduced_revision,
        verdict=accepted.verdict,
        content_hash=accepted.content_hash,
        duplicate=accepted.duplicate,
        signed_by=public_key_of(private).key_id if private is not None else None,
        url=f"{client.base_url}/r/{rep.recipe}",
        json_url=f"{client.base_url}/api/v1/recipes/{rep.recipe}.json",
    )


def publish_reproduction_file(
    path: Path, hub: str, token: str | None, *, signing: bool = True
) -> ReproductionPublished:
    """Publish the reproduction folder whose ``reproduction.json`` is at ``path`` (read once,
    by the one loader)."""
    loaded = load_result(path)
    if not isinstance(loaded.result, Reproduction):
        raise InputError(
            "E_INPUT",
            f"{loaded.path} is no reproduction",
            "Publish the reproduction.json that `rigbook reproduce` wrote, unchanged.",
        )
    return publish_reproduction(
        loaded.result, hub, token, folder=loaded.path.parent, signing=signing
    )
