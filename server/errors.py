"""Every error the service returns is an RFC 9457 problem (``application/problem+json``): ``type`` (a URN per
reason, ``urn:thunder-lint:problem:body_too_large``), ``title`` (the same for every problem of that type),
``status``, ``detail`` (this occurrence, in words), and the extension members ``code`` (the stable
machine-readable reason the service has always sent), ``request_id`` and, for a 422, ``fields`` (where in the
request: ``files[0].path``). Submitted values are never echoed back: they may be whole source files.
"""

from __future__ import annotations

import logging

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

_CODE_FOR_STATUS = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    408: "body_timeout",
    413: "body_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    500: "internal_error",
    503: "busy",
    504: "analysis_timeout",
}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, fields: list[dict] | None = None, headers=None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields
        self.headers = headers


PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_TYPE = "urn:thunder-lint:problem:"


def error_body(code: str, message: str, request_id: str | None, fields: list[dict] | None = None, *,
               status: int) -> dict:
    """An RFC 9457 problem details object."""
    body: dict = {
        "type": PROBLEM_TYPE + code,
        "title": code.replace("_", " ").capitalize(),
        "status": status,
        "detail": message,
        "code": code,
        "request_id": request_id,
    }
    if fields is not None:
        body["fields"] = fields
    return body


def field_name(loc: tuple | list) -> str:
    """("body", "files", 0, "path") -> "files[0].path"; ("query", "format") -> "format"."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        where, parts = parts[0], parts[1:]
        if not parts or (where == "body" and isinstance(parts[0], int) and len(parts) == 1):
            return "body"  # the body as a whole (a JSON syntax error carries a character offset here)
    name = ""
    for p in parts:
        if isinstance(p, int):
            name += f"[{p}]"
        else:
            name += f".{p}" if name else str(p)
    return name or "body"


def _respond(request: Request, status: int, code: str, message: str, fields=None, headers=None) -> JSONResponse:
    request.state.error_code = code
    request_id = getattr(request.state, "request_id", None)
    return JSONResponse(error_body(code, message, request_id, fields, status=status), status_code=status,
                        headers=headers, media_type=PROBLEM_MEDIA_TYPE)


def _is_json(request: Request) -> bool:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return content_type == "application/json" or content_type.endswith("+json")


async def on_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    fields = []
    for e in exc.errors():
        message = e.get("msg", "invalid value")
        if e.get("type") == "json_invalid":
            message = f"the body is not valid JSON: {(e.get('ctx') or {}).get('error', 'decode error')}"
            if len(e.get("loc", ())) > 1:
                message += f" (at character {e['loc'][1]})"
        elif e.get("type") == "extra_forbidden":
            message = "unknown field"
        elif message.startswith("Value error, "):
            message = message.removeprefix("Value error, ")
        fields.append({"field": field_name(e.get("loc", ())), "message": message})
    if not _is_json(request) and any(f["field"] == "body" for f in fields):
        return _respond(request, 415, "unsupported_media_type", "send the request body as JSON (Content-Type: application/json)")
    summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
    return _respond(request, 422, "invalid_request", f"invalid request: {summary}", fields)


async def on_http_error(request: Request, exc: HTTPException) -> JSONResponse:
    cause = exc.__cause__
    if exc.status_code == 400 and isinstance(cause, UnicodeDecodeError):
        # FastAPI's JSON parsing meets bytes that are not UTF-8 (JSON must be UTF-8).
        return _respond(
            request, 422, "invalid_request", f"the body is not valid UTF-8 (byte offset {cause.start})",
            [{"field": "body", "message": "not valid UTF-8"}],
        )
    code = _CODE_FOR_STATUS.get(exc.status_code, "error")
    message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
    if exc.status_code == 404 and message == "Not Found":
        message = f"no such endpoint: {request.url.path}"
    elif exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
    return _respond(request, exc.status_code, code, message, headers=getattr(exc, "headers", None))


async def on_api_error(request: Request, exc: ApiError) -> JSONResponse:
    return _respond(request, exc.status, exc.code, exc.message, exc.fields, exc.headers)


async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    logging.getLogger("thunder_lint.server").exception("internal error (request %s)", getattr(request.state, "request_id", None))
    return _respond(request, 500, "internal_error", f"internal error: {type(exc).__name__}")


def install(app) -> None:
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(HTTPException, on_http_error)
    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(Exception, on_unexpected)
