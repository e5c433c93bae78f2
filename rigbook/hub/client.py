"""HubClient: read recipes from a rigbook hub and publish recipes and bench results to it.

Every failure becomes a coded error with what the hub said, of the class its code names: a hub
that does not answer is E_CONNECT, a refused token (401, 403) E_AUTH (:class:`AuthError`), too
many writes (429) E_RATE_LIMIT (:class:`RateLimited`), a failure on the hub's side (5xx)
E_HUB_SERVER (:class:`HubServerError`), a slug it lacks E_RECIPE_NOT_FOUND, a refused recipe or
result its code with every reason, and an answer that is not a hub's JSON E_HTTP. The URL may be
the hub's root or its ``/api/v1``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from rigbook.errors import EndpointError, ErrorBody, ErrorDocument, InputError, RigbookError
from rigbook.hub.schemas import API_PREFIX, ReproductionAccepted, ResultAccepted
from rigbook.recipe.load import parse_recipe
from rigbook.recipe.schema import Recipe

PAGE = 200
# What the status alone says, whatever the body: the hub's own reasons, not the request's.
_BY_STATUS = {401: "E_AUTH", 403: "E_AUTH", 429: "E_RATE_LIMIT"}
# What a header value can carry: printable ASCII without spaces (rigbook's tokens are URL-safe base64).
TOKEN_RE = re.compile(r"[\x21-\x7e]+")


def hub_base_url(url: str) -> str:
    """The hub's root URL: ``http://hub:8080/api/v1/`` and ``http://hub:8080`` both give ``http://hub:8080``."""
    return url.strip().rstrip("/").removesuffix(API_PREFIX).rstrip("/")


class HubClient:
    """A client of one hub at ``base_url``, its root or its ``/api/v1`` (``token`` is needed for writes)."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 30.0):
        self.base_url = hub_base_url(base_url)
        self.token = token
        self.timeout = timeout

    def _headers(self) -> dict[str, str]:
        """The Authorization header; E_AUTH, without the token, when it cannot be one (a space, a line break,
        a hint captured with it)."""
        if not self.token:
            return {}
        if not TOKEN_RE.fullmatch(self.token):
            raise RigbookError(
                "E_AUTH",
                "the API token has characters a token cannot have (a space, a line break "
                "or a non-ASCII letter); it was not sent",
                "Pass the token alone: TOK=$(rigbook hub token create NAME) captures only it.",
            )
        return {"Authorization": f"Bearer {self.token}"}

    def _redacted(self, text: str) -> str:
        """``text`` with the token, were it in there, replaced."""
        return text.replace(self.token, "[token]") if self.token else text

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {**self._headers(), **kwargs.pop("headers", {})}
        url = self.base_url + path
        try:
            response = httpx.request(method, url, headers=headers, timeout=self.timeout, **kwargs)
        except httpx.InvalidURL as exc:
            raise InputError(
                "E_INPUT", f"not a hub URL: {self.base_url!r} ({self._redacted(str(exc))})"
            ) from None
        except httpx.HTTPError as exc:
            raise EndpointError(
                "E_CONNECT",
                f"the hub at {self.base_url} did not answer: {type(exc).__name__}: "
                f"{self._redacted(str(exc))}",
                "Check the --hub URL and that `rigbook hub serve` runs there.",
            ) from None
        if response.status_code >= 400:
            raise self._error(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON of a successful answer; E_HTTP when what answered is not a rigbook hub."""
        response = self._request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise EndpointError(
                "E_HTTP",
                f"{self.base_url}{path} did not answer with JSON: not a rigbook hub?",
                "Give --hub the hub's root URL, e.g. http://127.0.0.1:8080.",
            ) from None

    def _error(self, response: httpx.Response) -> RigbookError:
        """The coded error of a failed answer; the status decides for 401/403, 429 and 5xx."""
        status = response.status_code
        try:
            body: ErrorBody | None = ErrorDocument.model_validate_json(response.content).error
        except ValidationError:
            body = None
        code = _BY_STATUS.get(status) or (
            "E_HUB_SERVER" if status >= 500 else body.code if body else None
        )
        if code is None:
            # No rigbook error in the answer: whatever answered at that URL is not a rigbook hub.
            return EndpointError(
                "E_HTTP",
                f"{response.request.url} answered {status} without a rigbook error: "
                f"not a rigbook hub? {response.text[:200]}",
                "Give --hub the hub's root URL, e.g. http://127.0.0.1:8080.",
            )
        said = (
            response.text[:200]
            if body is None
            else body.message
            if body.code == code
            else f"{body.code}: {body.message}"
        )
        message = f"the hub answered {status}: {said}"
        if status == 429 and response.headers.get("retry-after"):
            message += f" (Retry-After: {response.headers['retry-after']} s)"
        remedy = body.remedy if body is not None and body.code == code else None
        return RigbookError(code, message, remedy, details=body.details if body else [])

    def list_recipes(self, **filters: str | int) -> list[Recipe]:
        """Every recipe on the hub matching ``filters`` (model, card_family, device_count, engine, tag, tier, q)."""
        recipes, offset = [], 0
        while True:
            page = self._json(
                "GET", f"{API_PREFIX}/recipes", params={**filters, "limit": PAGE, "offset": offset}
            )
            recipes += [
                parse_recipe(item, f"{self.base_url} item {offset + i}")
                for i, item in enumerate(page["items"])
            ]
            offset += len(page["items"])
            if not page["items"] or offset >= page["total"]:
                return recipes

    def get_recipe(self, slug: str) -> Recipe:
        """One recipe, its latest revision; E_RECIPE_NOT_FOUND when the hub has none by that slug."""
        return parse_recipe(self.get_record(slug), f"{self.base_url} {slug}")

    def get_record(self, slug: str) -> dict[str, Any]:
        """One recipe exactly as the hub serves it."""
        return self._json("GET", f"{API_PREFIX}/recipes/{quote(slug, safe='')}.json")

    def publish_recipe(self, record: dict[str, Any]) -> dict[str, Any]:
        """Add a recipe (or its next revision); returns the record as stored."""
        return self._json("POST", f"{API_PREFIX}/recipes", json=record)

    def publish_result(
        self, slug: str, result: bytes | dict[str, Any], signature: dict[str, str] | None = None
    ) -> ResultAccepted:
        """Add a bench result's perf points to recipe ``slug``: ``result`` is the file's bytes as
        written (sent unchanged, so the hub checks the hash on what was measured), or its JSON;
        ``signature`` the headers :func:`rigbook.hub.signing.sign` made for it."""
        return self._post_measured(
            f"{API_PREFIX}/recipes/{quote(slug, safe='')}/results", result, signature
        )

    def publish_capacity(
        self, slug: str, result: bytes | dict[str, Any], signature: dict[str, str] | None = None
    ) -> ResultAccepted:
        """Add a capacity result's users_at_slo point to recipe ``slug``; ``result`` and
        ``signature`` as for :meth:`publish_result`."""
        return self._post_measured(
            f"{API_PREFIX}/recipes/{quote(slug, safe='')}/capacity", result, signature
        )

    def publish_reproduction(
        self, slug: str, document: bytes, signature: dict[str, str] | None = None
    ) -> ReproductionAccepted:
        """Add a reproduction of recipe ``slug``: ``document`` is a
        :class:`rigbook.reproduce.document.ReproductionDocument`'s JSON, after its bench result was
        published; ``signature`` as for :meth:`publish_result`."""
        headers = dict(signature or {}) | {"content-type": "application/json"}
        answer = self._json(
            "POST",
            f"{API_PREFIX}/recipes/{quote(slug, safe='')}/reproductions",
            content=document,
            headers=headers,
        )
        return ReproductionAccepted.model_validate(answer)

    def _post_measured(
        self, path: str, result: bytes | dict[str, Any], signature: dict[str, str] | None
    ) -> ResultAccepted:
        headers = dict(signature or {})
        sent: dict[str, Any] = (
            {"content": result, "headers": headers | {"content-type": "application/json"}}
            if isinstance(result, bytes)
            else {"json": result, "headers": headers}
        )
        return ResultAccepted.model_validate(self._json("POST", path, **sent))

    def register_key(self, public_key: str) -> dict[str, Any]:
        """Register a signing key to this client's token; returns the key as the hub has it."""
        return self._json("POST", f"{API_PREFIX}/keys", json={"public_key": public_key})

    def list_keys(self) -> list[dict[str, Any]]:
        """The keys registered to this client's token."""
        return self._json("GET", f"{API_PREFIX}/keys")

    def revoke_key(self, key_id: str) -> dict[str, Any]:
        """Revoke a key of this client's token; returns the key and how many points were marked."""
        return self._json("POST", f"{API_PREFIX}/keys/{quote(key_id, safe='')}/revoke")
