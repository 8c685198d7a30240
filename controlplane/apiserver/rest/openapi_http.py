"""How the OpenAPI documents are sent, as kube-openapi's handler3 sends them.

- Every document with its ETag (quoted); a client that sends it back in
  If-None-Match gets 304 Not Modified (kubectl's HTTP cache revalidates so).
- A group/version's document asked for by the URL the `/openapi/v3` index
  lists (`?hash=<its ETag>`) is immutable: `Cache-Control: public,
  immutable` and an Expires a year ahead, so kubectl's disk cache answers
  later calls itself; asked for by a hash that is no longer its own, a 301
  to the current URL.
"""

from __future__ import annotations

import datetime
from email.utils import format_datetime

from aiohttp import web

from controlplane.api.openapi_etag import Served


def _not_modified(request: web.Request, quoted: str) -> bool:
    wanted = request.headers.get("If-None-Match")
    if not wanted:
        return False
    tags = {t.strip().removeprefix("W/") for t in wanted.split(",")}
    return quoted in tags or "*" in tags


def document(request: web.Request, body: bytes, etag: str) -> web.StreamResponse:
    """A JSON document with its ETag; 304 to a client that has it."""
    quoted = f'"{etag}"'
    if _not_modified(request, quoted):
        response = web.Response(status=304)
    else:
        response = web.Response(body=body, content_type="application/json")
    response.headers["ETag"] = quoted
    return response


def group_version(request: web.Request, served: Served) -> web.StreamResponse:
    """One group/version's OpenAPI v3 document (`served`), by the index's URL or not."""
    wanted = request.query.get("hash")
    if wanted and wanted != served.etag:
        return web.Response(status=301, headers={"Location": f"{request.path}?hash={served.etag}"})
    response = document(request, served.body, served.etag)
    response.headers["Vary"] = "Accept"
    if wanted:
        response.headers["Cache-Control"] = "public, immutable"
        year = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=365)
        response.headers["Expires"] = format_datetime(year, usegmt=True)
    return response
