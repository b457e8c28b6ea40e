"""The FastAPI application: POST /analyze, the rule docs, health (/healthz, /livez, /readyz), /metrics, version.

Linting never runs on the event loop: an /analyze request's files go to the worker pool (split over
the workers, see dispatch.py), so a slow file holds a worker, never the server. The app itself only
validates, dispatches and assembles JSON.
"""

from __future__ import annotations

import base64
import hashlib
import json
import platform
from collections import Counter
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Annotated

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response
from fastapi import routing as fastapi_routing

from analyzer.project.index import LIBRARY_DEFAULT_NOTE
from analyzer.selection import SelectionError, resolve
from analyzer.version import __version__
from rules import RULES, render_docs

from . import errors
from .archive import ArchiveBodyMiddleware
from .errors import ApiError
from .metrics import Metrics, MetricsMiddleware
from .middleware import PUBLIC_PATHS, AccessLogMiddleware, BearerAuthMiddleware, BodyLimitMiddleware
from .models import (
    AnalyzeRequest,
    AnalyzeResponse,
    ErrorResponse,
    HealthOut,
    OutputFormat,
    ProbeOut,
    RuleDocsOut,
    RuleOut,
    VersionOut,
)
from .project import RequestConfig, lint_request, request_config
from .pool import JobFailed, JobTimeout, PoolBusy, WorkerCrashed, WorkerPool
from .settings import LINT_S_PER_MIB_FASTEST, ServerSettings
from .worker import RenderJob, SubmittedFile

MEDIA_TYPES = {"json": "application/json", "sarif": "application/sarif+json", "github": "text/plain; charset=utf-8"}

_ERRORS = {
    401: {"model": ErrorResponse, "description": "Missing or wrong bearer token (when auth is on)."},
}
_ANALYZE_ERRORS = {
    **_ERRORS,
    408: {"model": ErrorResponse, "description": "The request body stalled."},
    413: {"model": ErrorResponse, "description": "Body, file count or a file over its limit."},
    415: {"model": ErrorResponse, "description": "The body is not sent as JSON."},
    422: {"model": ErrorResponse, "description": "Malformed JSON, wrong types or unknown rule codes; `fields` names them."},
    500: {"model": ErrorResponse, "description": "The worker linting this request died; it has been replaced."},
    503: {"model": ErrorResponse, "description": "Every worker is busy; retry later."},
    504: {"model": ErrorResponse, "description": "The request ran past the time limit; its worker was replaced."},
}


def _enabled(rc: RequestConfig) -> frozenset[str]:
    """The enabled codes of the request's selection (checked against the rule table by the model) and of a
    submitted pyproject.toml (checked here: an unknown code there is a 422 naming it)."""
    try:
        return resolve(RULES, rc.select, rc.ignore, rc.extend_select)
    except SelectionError as e:
        raise ApiError(422, "invalid_config", str(e), [{"field": "select", "message": str(e)}]) from None


def _check_limits(req: AnalyzeRequest, settings: ServerSettings, archive: bool = False) -> list[SubmittedFile]:
    if archive:  # a repository as a tar.gz: server/archive.py checked its own limits
        settings = replace(settings, max_files=settings.max_archive_files, max_file_bytes=settings.max_archive_file_bytes)
    if len(req.files) > settings.max_files:
        raise ApiError(
            413, "too_many_files", f"{len(req.files)} files is more than the limit of {settings.max_files} per request",
            [{"field": "files", "message": f"at most {settings.max_files} files"}],
        )
    submitted = []
    total = 0
    for i, f in enumerate(req.files):
        size = f.raw_size()
        total += size
        if size > settings.max_file_bytes:
            raise ApiError(
                413, "file_too_large", f"files[{i}] is larger than the limit of {settings.max_file_bytes} bytes per file",
                [{"field": f"files[{i}].content" if f.content is not None else f"files[{i}].content_base64",
                  "message": f"at most {settings.max_file_bytes} bytes"}],
            )
        if f.content is not None:
            submitted.append(SubmittedFile(f.path, text=f.content))
        else:
            submitted.append(SubmittedFile(f.path, data=base64.b64decode(f.content_base64)))
    _check_cost(total, len(req.files), settings)
    return submitted


def _check_cost(total_bytes: int, n_files: int, settings: ServerSettings) -> None:
    """413 at once for a request that cannot finish within the time limit even at the fastest measured
    linting rate: it would hold its workers for the whole limit and then fail with a 504."""
    parallel = max(1, min(settings.workers, n_files))
    at_least = total_bytes / 2**20 * LINT_S_PER_MIB_FASTEST / parallel
    if at_least > settings.timeout_s:
        raise ApiError(
            413, "request_too_large",
            f"{total_bytes / 2**20:.1f} MiB of source takes at least {at_least:.0f} s to lint here "
            f"({LINT_S_PER_MIB_FASTEST:g} s per MiB per worker, {parallel} worker(s)), more than the time limit "
            f"of {settings.timeout_s:g} s: send fewer or smaller files per request, or raise --timeout",
            [{"field": "files", "message": f"at most about {settings.timeout_s * parallel / LINT_S_PER_MIB_FASTEST:.1f} MiB "
              "of source per request with this time limit"}],
        )


def _trace_findings(req: AnalyzeRequest, submitted: list[SubmittedFile], enabled: frozenset[str]) -> list[dict]:
    """The request's trace findings that the selection and the submitted files' `# noqa` comments keep, as
    Diagnostic JSON. A finding for a file that was not submitted is kept as it is (no static findings to
    merge with, no `# noqa` to read)."""
    from analyzer.file_reader import Unreadable, decode
    from analyzer.static.noqa import is_suppressed, noqa_lines

    if not req.trace:
        return []
    texts = {}
    for f in submitted:
        try:
            texts[f.path] = f.text if f.text is not None else decode(f.data)
        except (Unreadable, UnicodeDecodeError, ValueError):
            texts[f.path] = None
    kept, noqa = [], {}
    for t in req.trace:
        text = texts.get(t.path)
        if t.code not in enabled:
            continue
        if t.path not in noqa:
            noqa[t.path] = noqa_lines(text) if text is not None else {}
        if is_suppressed(t.code, t.line, noqa[t.path]):
            continue
        kept.append(t.model_dump(exclude_none=True))
    return kept


def _merged(static: list[dict], trace: list[dict]) -> list[dict]:
    return sorted(static + trace, key=lambda d: (d["path"], d["line"], d["column"], d["code"], d["origin"]))


def settings_hash(enabled: frozenset[str], fix: str | None, rc: RequestConfig | None = None) -> str:
    settings = {"enabled": sorted(enabled), "fix": fix, "version": __version__}
    if rc is not None and (rc.assume_compiled is not None or rc.target != "any" or rc.jit_decorators or rc.per_file_ignores):
        settings.update(assume_compiled=rc.assume_compiled, target=rc.target, jit_decorators=list(rc.jit_decorators),
                        per_file_ignores=[[g, list(c)] for g, c in rc.per_file_ignores])
    canonical = json.dumps(settings, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _response_body(result, enabled: frozenset[str], fix: str | None, rc: RequestConfig | None = None,
                   notes: list[str] = ()) -> dict:
    files = []
    for o in result.files:
        entry = {"path": o.path, "sha256": o.sha256}
        if o.error is not None:
            entry["error"] = o.error
        if fix is not None:
            entry["fixed_content"] = o.fixed_content
        files.append(entry)
    diagnostics = result.diagnostics
    return {
        "version": __version__,
        "diagnostics": diagnostics,
        "files": files,
        "summary": {
            "files": len(files),
            "diagnostics": len(diagnostics),
            "files_with_errors": sum(1 for o in result.files if o.error is not None),
            "fixed": sum(o.applied for o in result.files),
            "by_code": dict(sorted(Counter(d["code"] for d in diagnostics).items())),
            "by_severity": dict(sorted(Counter(d["severity"] for d in diagnostics).items())),
            "version": __version__,
            "settings_hash": settings_hash(enabled, fix, rc),
            **({"notes": list(notes)} if notes else {}),
        },
    }


def _warm_up(app: FastAPI) -> None:
    """Do now what FastAPI and pydantic would do on the first requests and that reads files: the schema
    (lazy pydantic imports) and each endpoint's source location (FastAPI reads the endpoint's file once,
    for its error messages). After this, serving a request touches no file (tests/server/test_server_fs_audit.py)."""
    app.openapi()
    extract = getattr(fastapi_routing, "_extract_endpoint_context", None)  # private, cached per endpoint
    for route in app.routes:
        dependant = getattr(route, "dependant", None)
        if extract is not None and getattr(dependant, "call", None) is not None:
            try:
                extract(dependant.call)
            except Exception:
                pass


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    settings = settings or ServerSettings()
    pool = WorkerPool(settings.workers, max_waiting=settings.max_waiting, memory_mb=settings.worker_memory_mb)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await pool.start()
        _warm_up(app)
        try:
            yield
        finally:
            await pool.close()

    app = FastAPI(
        title="thunder-lint",
        version=__version__,
        description="Lints submitted PyTorch source for the places where compiled code can silently differ "
        "from eager PyTorch. Source is parsed, never executed; paths are labels, never opened.",
        lifespan=lifespan,
        docs_url=None,  # the interactive docs load scripts from a CDN; /openapi.json is the contract
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.pool = pool
    metrics = Metrics(pool)
    errors.install(app)

    @app.post(
        "/analyze",
        response_model=AnalyzeResponse,
        responses={
            **_ANALYZE_ERRORS,
            200: {
                "description": "The findings (JSON), or with `?format=sarif` a SARIF 2.1.0 log, or with "
                "`?format=github` GitHub workflow annotations: the same bytes the CLI prints.",
                "content": {"application/sarif+json": {"schema": {"type": "object"}}, "text/plain": {"schema": {"type": "string"}}},
            },
        },
        summary="Lint files",
    )
    async def analyze(
        req: AnalyzeRequest,
        request: Request,
        format: Annotated[OutputFormat, Query(description="json (default), sarif or github")] = "json",
    ):
        request.state.file_count = len(req.files)
        unknown = sorted(set(request.query_params) - {"format"})
        if unknown:  # a typo such as ?fromat=sarif must not silently give JSON
            raise ApiError(
                422, "invalid_request", f"unknown query parameter(s): {', '.join(unknown)}",
                [{"field": name, "message": "unknown query parameter"} for name in unknown],
            )
        submitted = _check_limits(req, settings, archive=getattr(request.state, "archive", False))
        rc = request_config(req, submitted)  # a submitted pyproject.toml, then the request's fields on top
        enabled = _enabled(rc)
        trace = _trace_findings(req, submitted, enabled)
        fix = ("unsafe" if req.unsafe_fixes else "safe") if req.fix else None
        notes = []
        # GitHub annotations carry no fixes, and building fixes is most of the linting time: skip it there.
        # The files are one project, as the CLI lints a folder: the findings come back as JSON and the
        # report (sarif, github) is rendered after.
        try:
            result, library_default = await lint_request(
                pool, submitted, rc, fix=fix, with_fixes=format != "github", timeout=settings.timeout_s,
                wait_timeout=settings.wait_timeout_s)
            if library_default:
                notes.append(LIBRARY_DEFAULT_NOTE.format(library_default))
            if trace:
                result.diagnostics = _merged(result.diagnostics, trace)
            if format != "json":
                render = RenderJob(tuple(result.diagnostics), format)
                result.rendered = await pool.run(render, timeout=settings.timeout_s, wait_timeout=settings.wait_timeout_s)
        except PoolBusy as e:
            raise ApiError(503, e.code, f"the server is busy: {e}", headers={"Retry-After": "5"}) from None
        except JobTimeout:
            raise ApiError(
                504, JobTimeout.code,
                f"linting ran past the time limit of {settings.timeout_s:g} s; the request was stopped and its "
                "worker replaced (send fewer or smaller files per request)",
            ) from None
        except WorkerCrashed:
            raise ApiError(500, WorkerCrashed.code, "the worker linting this request died; it has been replaced") from None
        except JobFailed as e:
            raise ApiError(500, JobFailed.code, f"internal error while linting: {e}") from None
        if format != "json":
            return Response(result.rendered, media_type=MEDIA_TYPES[format])
        return JSONResponse(_response_body(result, enabled, fix, rc, notes))

    @app.get("/rules", response_model=list[RuleOut], responses=_ERRORS, summary="List the rules")
    async def list_rules():
        return [_rule_out(info) for info in RULES.values()]

    @app.get(
        "/rules/{code}",
        response_model=RuleDocsOut,
        responses={**_ERRORS, 404: {"model": ErrorResponse, "description": "No such rule."}},
        summary="A rule's documentation",
    )
    async def rule_docs(code: str):
        by_name = {info.name: c for c, info in RULES.items()}
        key = by_name.get(code.strip(), code.strip().upper())
        if key not in RULES:
            raise ApiError(404, "unknown_rule", f"no rule {code!r}; GET /rules lists them")
        return {**_rule_out(RULES[key]), "docs": render_docs(key)}

    @app.get("/healthz", response_model=HealthOut, responses={503: {"model": HealthOut, "description": "No worker alive."}})
    async def healthz():
        alive = pool.alive
        body = {"status": "ok" if alive else "degraded", "workers": alive, "idle_workers": pool.idle, "replaced_workers": pool.replaced}
        return JSONResponse(body, status_code=200 if alive else 503)

    @app.get("/livez", response_model=ProbeOut, summary="Liveness: the process answers")
    async def livez():
        # answered by the event loop itself: a hung loop (the only thing a restart cures) gives no answer at all
        return {"status": "ok"}

    @app.get("/readyz", response_model=ProbeOut, responses={503: {"model": ProbeOut, "description": "Not ready."}},
             summary="Readiness: the worker pool is up")
    async def readyz():
        if pool.ready:
            return {"status": "ok"}
        return JSONResponse({"status": "not ready"}, status_code=503)

    @app.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}},
             summary="Prometheus metrics")
    async def metrics_endpoint():
        data, media_type = metrics.exposition()
        return Response(data, media_type=media_type)

    @app.get("/version", response_model=VersionOut, responses=_ERRORS)
    async def version():
        return {"name": "thunder-lint", "version": __version__, "python": platform.python_version(), "rules": list(RULES)}

    _customize_openapi(app, settings)
    # Added last = outermost: the access log sees every request, auth runs before the body is read.
    app.add_middleware(ArchiveBodyMiddleware, settings=settings)  # inside the body limit: it reads the raw body
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes, read_timeout=settings.body_timeout_s,
                       archive_limit=settings.max_archive_bytes)
    if settings.token is not None:
        app.add_middleware(BearerAuthMiddleware, token=settings.token)
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware, allow_origins=list(settings.cors_origins), allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "X-Request-ID"], expose_headers=["X-Request-ID"],
        )
    app.add_middleware(AccessLogMiddleware)
    app.add_middleware(MetricsMiddleware, metrics=metrics, routes_of=app)
    return app


def _rule_out(info) -> dict:
    return {"code": info.code, "name": info.name, "severity": info.severity, "summary": info.summary, "fixable": info.fixable}


def _customize_openapi(app: FastAPI, settings: ServerSettings) -> None:
    """The schema states this server's limits, and with auth on, the bearer scheme (all but /healthz)."""
    default_openapi = app.openapi

    def openapi():
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = default_openapi()
        models = schema["components"]["schemas"]
        models["AnalyzeRequest"]["properties"]["files"]["maxItems"] = settings.max_files
        models["SourceFile"]["properties"]["content"]["description"] += f" At most {settings.max_file_bytes} bytes as UTF-8."
        schema["info"]["description"] += (
            f" Limits: a body of at most {settings.max_body_bytes} bytes, {settings.max_files} files, "
            f"{settings.max_file_bytes} bytes per file, {settings.timeout_s:g} s per request."
        )
        for ops in schema.get("paths", {}).values():  # errors are RFC 9457 problems, in their own media type
            for op in ops.values():
                for response in op.get("responses", {}).values():
                    content = response.get("content", {})
                    if content.get("application/json", {}).get("schema", {}).get("$ref", "").endswith("/ErrorResponse"):
                        content["application/problem+json"] = content.pop("application/json")
        if settings.token is not None:
            schema["components"]["securitySchemes"] = {"bearerAuth": {"type": "http", "scheme": "bearer"}}
            for path, ops in schema.get("paths", {}).items():
                if path not in PUBLIC_PATHS:
                    for op in ops.values():
                        op["security"] = [{"bearerAuth": []}]
        app.openapi_schema = schema
        return schema

    app.openapi = openapi
