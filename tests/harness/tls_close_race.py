"""kopf's shutdown, reduced, to show where the ResourceWarning of kopf's
07-subhandlers example (tests/integration/clientlibs) comes from.

kopf's KopfRunner cancels its watch streams, closes the aiohttp session,
shuts down async generators and closes the loop; it skips its 1 s sleep on
aiohttp >= 3.12.4, whose ClientSession.close() waits for the pooled
connections to close. A watch cancelled mid-stream is not pooled: aiohttp
closes it (the TLS close_notify goes out) and waits for nothing, so the
loop is closed before the server's close_notify or FIN can be read, and the
socket transport is collected unclosed: two watches, four ResourceWarnings
(two transports, two sockets), as in kopf's failure. Any server shows it:

    python -m tests.harness.tls_close_race serve PORT CERT KEY   # bare aiohttp
    python -m tests.harness.tls_close_race client URL RUNS [--ca CA]
        [--cert CRT --key KEY] [--watches 2] [--sleep SECONDS]

`client` prints, per run, how many ResourceWarnings gc found, and how many
runs had any; `--sleep 0.25` (aiohttp's graceful-shutdown advice) before
the loop closes makes them go.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import ssl
import sys
import warnings

from aiohttp import ClientSession, ClientTimeout, TCPConnector, web


def _client_context(args: argparse.Namespace) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=args.ca or None)
    if not args.ca:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if args.cert:
        ctx.load_cert_chain(args.cert, args.key)
    return ctx


async def _watch_then_stop(args: argparse.Namespace) -> None:
    session = ClientSession(connector=TCPConnector(ssl=_client_context(args)))
    opened = asyncio.Semaphore(0)

    async def watch() -> None:
        async with session.get(args.url, timeout=ClientTimeout(total=None)) as resp:
            resp.raise_for_status()
            opened.release()
            async for _ in resp.content:
                pass

    tasks = [asyncio.create_task(watch()) for _ in range(args.watches)]
    for _ in tasks:
        await asyncio.wait_for(opened.acquire(), 30)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await session.close()
    if args.sleep:
        await asyncio.sleep(args.sleep)


def run_once(args: argparse.Namespace) -> int:
    """One operator's life; the ResourceWarnings gc finds after it."""
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(_watch_then_stop(args))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
    return sum(issubclass(w.category, ResourceWarning) for w in caught)


async def _events(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    await resp.prepare(request)
    while True:
        await resp.write(b'{"type":"BOOKMARK","object":{}}\n')
        await asyncio.sleep(1)


def serve(port: int, cert: str, key: str) -> None:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    app = web.Application()
    app.router.add_get("/watch", _events)
    web.run_app(app, host="127.0.0.1", port=port, ssl_context=ctx, print=None)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.harness.tls_close_race")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve")
    s.add_argument("port", type=int)
    s.add_argument("cert")
    s.add_argument("key")
    c = sub.add_parser("client")
    c.add_argument("url")
    c.add_argument("runs", type=int)
    for flag in ("--ca", "--cert", "--key"):
        c.add_argument(flag, default="")
    c.add_argument("--watches", type=int, default=2)
    c.add_argument("--sleep", type=float, default=0.0)
    args = p.parse_args(argv)
    if args.command == "serve":
        serve(args.port, args.cert, args.key)
        return 0
    bad = 0
    for i in range(args.runs):
        found = run_once(args)
        bad += found > 0
        print(f"run {i}: {found} ResourceWarnings", flush=True)
    print(f"{bad}/{args.runs} runs left transports unclosed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
