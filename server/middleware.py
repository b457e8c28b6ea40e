"""ASGI middleware: request ids and access logs, bearer-token auth, and the request body size limit.

Plain ASGI rather than Starlette's BaseHTTPMiddleware so that the body limit applies while the body
streams in (a 1 GB upload is refused after max_body_bytes, not buffered) and auth is checked before a
single body byte is read.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import re
import time
import uuid

from starlette.exceptions import HTTPException

from .errors import PROBLEM_MEDIA_TYPE, error_body


# A whole repository as a gzip'd tar (server/archive.py reads it); the body limit tells such requests apart.
ARCHIVE_TYPES = frozenset({b"application/gzip", b"application/x-gzip", b"application/x-tar+gzip", b"application/tar+gzip"})


def is_archive_request(scope) -> bool:
    if scope.get("type") != "http" or scope.get("method") != "POST" or scope.get("path") != "/analyze":
        return False
    for k, v in scope.get("headers", ()):
        if k == b"content-type":
            return v.split(b";", 1)[0].strip().lower() in ARCHIVE_TYPES
    return False

access_log = logging.getLogger("thunder_lint.access")

REQUEST_ID_HEADER = b"x-request-id"
_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
# Open to everyone even with auth on: load balancers and orchestrators probe them without credentials.
# (/metrics is not: a scraper sends the bearer token, as Prometheus' `authorization` setting does.)
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz"})


async def send_json(send, status: int, body: dict, headers: list[tuple[bytes, bytes]] = (),
                    media_type: str = PROBLEM_MEDIA_TYPE) -> None:
    data = json.dumps(body).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", media_type.encode()), (b"content-length", str(len(data)).encode())]
            + list(headers),
        }
    )
    await send({"type": "http.response.body", "body": data})


def _header(scope, name: bytes) -> bytes | None:
    for k, v in scope.get("headers", ()):
        if k == name:
            return v
    return None


class AccessLogMiddleware:
    """Gives every request an id (the client's X-Request-ID if it is sane) and logs one JSON line per
    request: id, method, path, status, duration, file count, body sizes. Never the body or source text."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        given = (_header(scope, REQUEST_ID_HEADER) or b"").decode("latin-1")
        request_id = given if _SAFE_REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        started = time.perf_counter()
        status = [0]
        sent = [0]

        async def send_with_id(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                headers = [h for h in message.get("headers", []) if h[0].lower() != REQUEST_ID_HEADER]
                message = {**message, "headers": headers + [(REQUEST_ID_HEADER, request_id.encode())]}
            elif message["type"] == "http.response.body":
                sent[0] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            entry = {
                "event": "request",
                "request_id": request_id,
                "method": scope.get("method"),
                "path": scope.get("path"),
                "status": status[0] or 500,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                "files": state.get("file_count"),
                "bytes_in": state.get("bytes_in", 0),
                "bytes_out": sent[0],
                "client": (scope.get("client") or ("", 0))[0],
            }
            if state.get("error_code"):
                entry["error"] = state["error_code"]
            access_log.info(json.dumps(entry, separators=(",", ":")))


class BearerAuthMiddleware:
    """401 unless ``Authorization: Bearer <token>`` matches (constant-time compare)."""

    def __init__(self, app, token: str) -> None:
        self.app = app
        self.token = token.encode("utf-8")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("path") in PUBLIC_PATHS:
            return await self.app(scope, receive, send)
        given = _header(scope, b"authorization") or b""
        scheme, _, credentials = given.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self.token):
            return await self.app(scope, receive, send)
        state = scope.setdefault("state", {})
        state["error_code"] = "unauthorized"
        message = "missing bearer token" if not given else "invalid bearer token"
        await send_json(
            send,
            401,
            error_body("unauthorized", f"{message}: send `Authorization: Bearer <token>`", state.get("request_id"),
                       status=401),
            [(b"www-authenticate", b'Bearer realm="thunder-lint"')],
        )


class BodyTooLarge(HTTPException):
    """Raised from ``receive``: an HTTPException, so that FastAPI's body parsing passes it on unchanged."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than the limit of {limit} bytes")


class BodyTooSlow(HTTPException):
    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"the request body stalled: no data for {seconds:g} s")


class BadEncoding(HTTPException):
    def __init__(self, detail: str) -> None:
        super().__init__(400, detail)


class Inflater:
    """A ``Content-Encoding: gzip`` body inflated as it streams in, never past ``limit`` bytes of output: a
    gzip bomb (a few KB that inflate to gigabytes) costs at most ``limit`` bytes of memory before its 413."""

    def __init__(self, limit: int) -> None:
        import zlib

        self._zlib = zlib
        self.limit = limit
        self.out = 0
        self._d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip framing only

    def feed(self, chunk: bytes, last: bool) -> bytes:
        try:
            data = self._d.decompress(chunk, self.limit - self.out + 1)  # one byte more than allowed: the overflow
        except self._zlib.error as e:
            raise BadEncoding(f"the request body is not valid gzip ({e})") from None
        self.out += len(data)
        if self.out > self.limit or self._d.unconsumed_tail:
            raise BodyTooLarge(self.limit)
        if last and not self._d.eof:
            raise BadEncoding("the request body is not valid gzip (it ends before the gzip stream does)")
        return data


# Before a 413, read and drop at most this much of the body, for at most this long: clients that send
# the whole body before reading (Python's urllib, requests) otherwise get a connection reset (closing a
# socket with unread data sends RST) instead of the 413 and its message. Bounded, so a huge upload
# still costs us little.
DRAIN_MAX_BYTES = 64 * 1024 * 1024
DRAIN_SECONDS = 5.0
DRAIN_STALL_SECONDS = 0.5  # a client that sends nothing more is not waited for


async def _drain(receive, declared: int) -> None:
    budget = min(declared, DRAIN_MAX_BYTES)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DRAIN_SECONDS
    drained = 0
    while drained < budget:
        left = deadline - loop.time()
        if left <= 0:
            return
        try:
            message = await asyncio.wait_for(receive(), min(left, DRAIN_STALL_SECONDS))
        except (TimeoutError, asyncio.TimeoutError):
            return
        if message["type"] != "http.request":
            return
        drained += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


class BodyLimitMiddleware:
    """413 for a body over ``limit`` bytes: at once from Content-Length, else as soon as the stream passes it.
    408 when the body stops arriving for ``read_timeout`` seconds (a stalled client must not hold a
    connection and a half-read body forever; uvicorn only times out idle keep-alive connections)."""

    def __init__(self, app, limit: int, read_timeout: float = 30.0, archive_limit: int | None = None) -> None:
        self.app = app
        self.limit = limit
        self.read_timeout = read_timeout
        # a whole repository as a gzip'd tar (server/archive.py) has a limit of its own: the same checks, made once
        self.archive = BodyLimitMiddleware(app, archive_limit, read_timeout) \
            if archive_limit is not None and archive_limit != limit else None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if self.archive is not None and is_archive_request(scope):
            return await self.archive(scope, receive, send)
        state = scope.setdefault("state", {})
        declared = _header(scope, b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                size = -1
            if size < 0:
                return await self._refuse(send, state, 400, "bad_request", "the Content-Length header is not a number")
            if size > self.limit:
                if size <= DRAIN_MAX_BYTES and _header(scope, b"expect") is None:  # 100-continue: sends nothing yet
                    await _drain(receive, size)
                return await self._too_large(send, state)
        encoding = (_header(scope, b"content-encoding") or b"identity").strip().lower()
        inflater = None
        if encoding == b"gzip":
            inflater = Inflater(self.limit)
            # the app sees the inflated body: no Content-Encoding, and no Content-Length that no longer holds
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"]
                                          if k not in (b"content-encoding", b"content-length")]}
        elif encoding != b"identity":
            return await self._refuse(send, state, 415, "unsupported_media_type",
                                      "the request body's Content-Encoding must be gzip or identity")
        received = [0]
        started = [False]
        body_done = [False]

        async def limited_receive():
            if body_done[0]:
                return await receive()  # after the body: disconnect notices, no time limit
            try:
                message = await asyncio.wait_for(receive(), self.read_timeout)
            except TimeoutError:
                raise BodyTooSlow(self.read_timeout) from None
            if message["type"] == "http.request":
                body_done[0] = not message.get("more_body", False)
                received[0] += len(message.get("body", b""))
                state["bytes_in"] = received[0]
                if received[0] > self.limit:
                    raise BodyTooLarge(self.limit)
                if inflater is not None:
                    message = {**message, "body": inflater.feed(message.get("body", b""), body_done[0])}
            return message

        async def tracking_send(message):
            if message["type"] == "http.response.start":
                started[0] = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if not started[0]:
                if not body_done[0]:
                    await _drain(receive, DRAIN_MAX_BYTES)
                await self._too_large(send, state)
        except BodyTooSlow as e:
            if not started[0]:
                await self._refuse(send, state, 408, "body_timeout", e.detail)
        except BadEncoding as e:
            if not started[0]:
                await self._refuse(send, state, 400, "bad_request", e.detail)

    async def _too_large(self, send, state) -> None:
        await self._refuse(
            send, state, 413, "body_too_large", f"the request body is larger than the limit of {self.limit} bytes"
        )

    @staticmethod
    async def _refuse(send, state, status: int, code: str, message: str) -> None:
        state["error_code"] = code
        await send_json(send, status, error_body(code, message, state.get("request_id"), status=status),
                        [(b"connection", b"close")])
