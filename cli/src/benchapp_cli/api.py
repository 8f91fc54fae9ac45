"""The REST API as a few typed calls, and its failures as one-line messages.

Every failure a user can cause or meet (a wrong token, an unknown name, a refused request, a server that cannot
be reached) becomes an ApiError whose message names the cause; the command turns it into that line and an exit
code, never a traceback. The token goes into the Authorization header only: no message quotes it.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

API_PREFIX = "/api/v1/"
PAGE_LIMIT = 1000
TIMEOUT_S = 30.0


class ApiError(Exception):
    """A request that did not give an answer; `usage` says whether the caller's input is the cause (a 4xx)."""

    def __init__(self, message: str, *, usage: bool, code: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.usage = usage
        self.code = code  # the API's error code when it gave one ("target_unreachable", "state_conflict")
        self.detail = detail or message  # the API's own words


def _detail(response: httpx.Response) -> str:
    """The API's own explanation of an error, on one line (DRF: {"detail": ...} or {"field": ["message"]})."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.reason_phrase or f"HTTP {response.status_code}"
    if isinstance(body, dict):
        if "detail" in body:
            return str(body["detail"])
        body.pop("code", None)
        parts = []
        for field, messages in body.items():
            text = "; ".join(str(m) for m in messages) if isinstance(messages, list) else str(messages)
            parts.append(text if field == "non_field_errors" else f"{field}: {text}")
        return "; ".join(parts)
    if isinstance(body, list):
        return "; ".join(str(m) for m in body)
    return str(body)


def _code(response: httpx.Response) -> str:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return ""
    return str(body.get("code", "")) if isinstance(body, dict) else ""


def error_for(response: httpx.Response, *, what: str) -> ApiError:
    """The message for a failed request about `what` ("campaign 12", "run 3")."""
    code, detail = response.status_code, _detail(response)
    if code == 401:
        return ApiError(f"authentication failed ({detail}): check BENCHAPP_TOKEN or --token", usage=True)
    if code == 403:
        return ApiError(f"permission denied for {what} ({detail}): the token's role may not do this", usage=True)
    if code == 404:
        return ApiError(f"{what} not found on the server", usage=True)
    if code == 409:
        return ApiError(f"conflict: {detail}", usage=True)
    if code == 429:
        return ApiError(f"too many requests: {detail}", usage=False)
    if 400 <= code < 500:
        return ApiError(f"the server refused the request for {what}: {detail}", usage=True, code=_code(response),
                        detail=detail)
    return ApiError(f"server error {code} for {what}: {detail}", usage=False)


def base_url(url: str) -> str:
    """The server's root from what a user may type: with or without a trailing slash or /api/v1."""
    url = url.strip().rstrip("/")
    if url.endswith("/api/v1"):
        url = url[: -len("/api/v1")]
    if not url.startswith(("http://", "https://")):
        raise ApiError(f"the URL must start with http:// or https://, not {url!r}", usage=True)
    return url


class Api:
    """benchapp's API at `url` with `token`."""

    def __init__(self, *, url: str, token: str, timeout_s: float = TIMEOUT_S) -> None:
        self.url = base_url(url)
        self._http = httpx.Client(base_url=self.url + API_PREFIX, timeout=timeout_s,
                                  headers={"Authorization": f"Token {token}", "Accept": "application/json"})

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, *, what: str, expect: tuple[int, ...] = (200,), **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise ApiError(f"{self.url} did not answer in time ({method} {API_PREFIX}{path})", usage=False) from None
        except httpx.HTTPError as exc:
            raise ApiError(f"cannot reach {self.url}: {exc}", usage=False) from None
        if response.status_code not in expect:
            raise error_for(response, what=what)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ApiError(f"{self.url} answered {method} {API_PREFIX}{path} with something that is not JSON: "
                           "is this benchapp's URL?", usage=False) from None

    def get(self, path: str, *, what: str, params: dict[str, Any] | None = None) -> Any:
        return self.request("GET", path, what=what, params=params)

    def listing(self, path: str, *, what: str, params: dict[str, Any] | None = None,
                limit: int | None = None) -> Iterator[dict[str, Any]]:
        """Every row of a paginated list (or the first `limit`)."""
        offset, seen = 0, 0
        while True:
            page_size = PAGE_LIMIT if limit is None else min(PAGE_LIMIT, limit - seen)
            page = self.get(path, what=what, params={**(params or {}), "limit": page_size, "offset": offset})
            rows = page.get("results", []) if isinstance(page, dict) else page
            for row in rows:
                yield row
                seen += 1
                if limit is not None and seen >= limit:
                    return
            if not isinstance(page, dict) or not page.get("next") or not rows:
                return
            offset += len(rows)

    def find(self, kind: str, path: str, name_or_id: str) -> dict[str, Any]:
        """A campaign, target or scenario by id (digits) or exact name."""
        if name_or_id.isdigit():
            return dict(self.get(f"{path}{int(name_or_id)}/", what=f"{kind} {name_or_id}"))
        matches = [row for row in self.listing(path, what=f"{kind} {name_or_id!r}", params={"q": name_or_id})
                   if row.get("name") == name_or_id]
        if not matches:
            raise ApiError(f"{kind} {name_or_id!r} not found on the server (give its exact name or its id)",
                           usage=True)
        return matches[0]

    # ---------------------------------------------------------------- the calls the commands make

    def run(self, run_id: int) -> dict[str, Any]:
        return dict(self.get(f"runs/{run_id}/", what=f"run {run_id}"))

    def launch(self, campaign_id: int, *, label: str, idempotency_key: str | None) -> dict[str, Any]:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return dict(self.request("POST", f"campaigns/{campaign_id}/launch/", what=f"campaign {campaign_id}",
                                 expect=(202,), json={"label": label}, headers=headers))

    def comparison(self, run_id: int) -> dict[str, Any]:
        return dict(self.get("comparisons/", what=f"the comparison of run {run_id}", params={"runs": run_id}))

    def regressions(self, run_id: int) -> list[dict[str, Any]]:
        return list(self.listing("regressions/", what=f"the regressions of run {run_id}",
                                 params={"run": run_id, "kind": "regression"}))

    def target(self, target_id: int) -> dict[str, Any]:
        return dict(self.get(f"targets/{target_id}/", what=f"target {target_id}"))

    def target_check(self, target_id: int, *, name: str) -> dict[str, Any]:
        return dict(self.request("POST", f"targets/{target_id}/check/", what=f"target {name!r}", json={}))

    def runs(self, *, limit: int, campaign_id: int | None = None) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"ordering": "-id"}
        if campaign_id is not None:
            params["campaign"] = campaign_id
        return list(self.listing("runs/", what="the runs", params=params, limit=limit))

    def results_import(self, *, logs: list[Path], target_id: int, scenario_id: int) -> dict[str, Any]:
        files = [("files", (path.name, path.read_bytes(), "text/plain")) for path in logs]
        return dict(self.request("POST", "results/import/", what="the import", expect=(201,), files=files,
                                 data={"target": str(target_id), "scenario": str(scenario_id)}))
