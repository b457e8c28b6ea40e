"""A header-read timeout for uvicorn's HTTP/1.1 protocol.

uvicorn times out idle keep-alive connections, but a connection that sends part of a request's headers
and then nothing stays open forever (1,500 such connections were held for 65 s and counting): each
costs a socket and a file descriptor, and enough of them exhaust the server. Here every connection must
finish a request's headers within ``header_timeout`` seconds of opening, or of the previous response;
otherwise it gets a 408 (if it sent anything) and is closed. The body has its own timeout
(BodyLimitMiddleware).
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

_BODY = (b'{"type": "urn:thunder-lint:problem:header_timeout", "title": "Header timeout", "status": 408, '
         b'"detail": "the request headers did not arrive in time", "code": "header_timeout", "request_id": null}')
_REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/problem+json\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_BODY), _BODY)
)


class UvicornChanged(RuntimeError):
    """uvicorn's HTTP/1.1 protocol no longer has what the header timeout hooks into."""


# What HeaderTimeoutProtocol uses of uvicorn's H11Protocol: methods it overrides and calls, attributes it reads.
# They are internals (no public API offers this hook), so the service checks them before serving: a rename in a
# newer uvicorn must stop the service with a clear error, never silently drop the protection.
_USED_METHODS = ("connection_made", "data_received", "on_response_complete", "connection_lost")
# (it also reads the instance attributes `cycle`, `loop` and `transport`: tests/server/test_server_connections.py
# sends slow headers through the real server, which fails if they move)


def check_uvicorn(protocol: type = H11Protocol) -> None:
    missing = [m for m in _USED_METHODS if not callable(getattr(protocol, m, None))]
    if missing:
        import uvicorn

        raise UvicornChanged(f"uvicorn {uvicorn.__version__}'s H11Protocol has no {', '.join(missing)}: the header-read "
                             "timeout cannot be installed; install a uvicorn in the tested range (pyproject's [server] extra)")


class HeaderTimeoutProtocol(H11Protocol):
    header_timeout = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._bytes_since_response = 0
        self._arm()

    def _arm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(self.header_timeout, self._expired)

    def data_received(self, data: bytes) -> None:
        self._bytes_since_response += len(data)
        super().data_received(data)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._bytes_since_response = 0
        self._arm()  # the next request on this connection gets the same time for its headers

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        super().connection_lost(exc)

    def _expired(self) -> None:
        self._header_timer = None
        waiting_for_headers = self.cycle is None or self.cycle.response_complete
        if not waiting_for_headers or self.transport.is_closing():
            return  # a request is being served: its body and run have their own limits
        if self._bytes_since_response:
            self.transport.write(_REQUEST_TIMEOUT)
        self.transport.close()


def protocol_with_timeout(seconds: float) -> type[HeaderTimeoutProtocol]:
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": seconds})
