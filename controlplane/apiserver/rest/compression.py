"""gzip of large responses, as kube-apiserver (APIResponseCompression).

A response of at least THRESHOLD bytes (128 KiB, kube-apiserver's) to a
client whose Accept-Encoding names gzip goes out gzip-compressed at level 1
(kube-apiserver's), with `Content-Encoding: gzip` and `Vary:
Accept-Encoding`; the compression runs on the executor. Smaller answers and
watch streams are sent as they are; an unpaged list, streamed page by page,
is compressed as it streams when its first page alone passes the threshold.
"""

from __future__ import annotations

import gzip

from aiohttp import web
from aiohttp.web_response import ContentCoding

from controlplane.apiserver.rest.context import Server

THRESHOLD = 128 * 1024
LEVEL = 1


def accepts_gzip(request: web.Request) -> bool:
    for part in request.headers.get("Accept-Encoding", "").split(","):
        coding, *params = (p.strip() for p in part.split(";"))
        if coding.lower() != "gzip":
            continue
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    return float(value) > 0
                except ValueError:
                    return False
        return True
    return False


async def compress(request: web.Request, response: web.StreamResponse, server: Server) -> None:
    """Compress a whole-body response in place when it is large and gzip is accepted."""
    if not isinstance(response, web.Response) or response.prepared:
        return
    body = response.body
    if not isinstance(body, bytes) or len(body) < THRESHOLD or not accepts_gzip(request):
        return
    if "Content-Encoding" in response.headers:
        return
    response.body = await server.run(gzip.compress, body, LEVEL)
    response.headers["Content-Encoding"] = "gzip"
    response.headers.add("Vary", "Accept-Encoding")


def stream(request: web.Request, response: web.StreamResponse, first: bytes) -> None:
    """Before a streamed response starts: compress it if its first chunk is large."""
    if len(first) >= THRESHOLD and accepts_gzip(request):
        response.enable_compression(ContentCoding.gzip)
        response.headers.add("Vary", "Accept-Encoding")
