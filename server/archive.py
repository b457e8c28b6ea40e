"""A whole repository in one request: ``POST /analyze`` with a gzip'd tar as the body.

    tar czf - . | curl --data-binary @- -H 'Content-Type: application/gzip' http://HOST/analyze

The archive is read in memory, never extracted to disk: the gzip stream is inflated with a hard cap on the
inflated size (a gzip bomb stops at the cap, not at the machine's memory), then the tar is walked member by
member. What the CLI would lint in that folder is taken: its default excludes and includes, the archive's own
``.gitignore`` files, and a ``pyproject.toml`` / ``thunder-lint.toml`` config, so the findings equal the CLI's
on the same tree. Hostile members are refused with a 4xx naming the member: an absolute name or one with
``..``, links (symbolic or hard), devices and FIFOs. Options a JSON request puts in its body come as query
parameters (``select``, ``ignore``, ``extend_select`` comma-separated; ``fix``, ``unsafe_fixes``; ``target``).

The middleware turns such a request into the JSON request the endpoint already takes (base64 contents), and
marks it so that the endpoint applies the archive limits instead of the per-request file limits.
"""

from __future__ import annotations

import base64
import io
import json
import posixpath
import tarfile
import tomllib
import zlib
from urllib.parse import parse_qsl, urlencode

import pathspec  # noqa: F401 (GitIgnored reads .gitignore with it: loaded at start-up, never on a request)

from analyzer.config import CONFIG_NAMES as STANDALONE_NAMES
from analyzer.config import ConfigError, from_toml
from analyzer.discovery import FileRules, GitIgnored

from .errors import ApiError, error_body
from .middleware import is_archive_request, send_json

# Query parameters of an archive request that become fields of the JSON request.
_LIST_FIELDS = ("select", "ignore", "extend_select", "assume_compiled")
_BOOL_FIELDS = ("fix", "unsafe_fixes")
CONFIG_NAMES = ("pyproject.toml", "thunder-lint.toml", ".thunder-lint.toml")  # read as the CLI reads them


def inflate(data: bytes, max_inflated: int) -> bytes:
    """The gzip member(s) in ``data`` inflated, refusing (413) past ``max_inflated`` bytes as soon as it is passed."""
    out = io.BytesIO()
    rest = data
    if not rest:
        raise ApiError(400, "invalid_archive", "the request body is empty: send a gzip'd tar of the files")
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip header and trailer
        try:
            chunk = rest
            while chunk:
                piece = d.decompress(chunk, max_inflated + 1 - out.tell())
                out.write(piece)
                if out.tell() > max_inflated:
                    raise ApiError(413, "archive_too_large_inflated",
                                   f"the archive inflates past the limit of {max_inflated} bytes (--max-archive-inflated-bytes)")
                chunk = d.unconsumed_tail
            out.write(d.flush())
        except zlib.error as e:
            raise ApiError(400, "invalid_archive", f"the body is not valid gzip data: {e}") from None
        if not d.eof:
            raise ApiError(400, "invalid_archive", "the gzip data ends early (a truncated upload?)")
        rest = d.unused_data.lstrip(b"\0")  # concatenated gzip members, as gzip(1) reads them
    return out.getvalue()


def _safe_name(name: str) -> str:
    """The member's path relative to the archive's root, or a 4xx for a name that leaves it."""
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ApiError(422, "unsafe_archive_member", f"archive member {name!r} has an absolute name")
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        raise ApiError(422, "unsafe_archive_member", f"archive member {name!r} leaves the archive's root (`..`)")
    clean = posixpath.normpath("/".join(p for p in parts if p not in ("", ".")))
    return "" if clean == "." else clean


def check_limits(files: dict[str, bytes], max_files: int, max_file_bytes: int) -> None:
    """The archive limits on what will be linted: a count of files, and bytes per file."""
    if len(files) > max_files:
        raise ApiError(413, "too_many_files", f"the archive holds {len(files)} files to lint, more than the limit of "
                       f"{max_files} (--max-archive-files)")
    for name, data in files.items():
        if len(data) > max_file_bytes:
            raise ApiError(413, "file_too_large", f"archive member {name!r} is larger than the limit of {max_file_bytes} "
                           "bytes per file (--max-archive-file-bytes)")


def read_members(raw: bytes) -> dict[str, bytes]:
    """Every regular file of the tar in ``raw`` (path -> bytes); links, devices and unsafe names are refused."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(raw), mode="r:")
    except tarfile.TarError as e:
        raise ApiError(400, "invalid_archive", f"the inflated body is not a tar archive: {e}") from None
    files: dict[str, bytes] = {}
    with tar:
        try:
            for m in tar:
                name = _safe_name(m.name)
                if m.issym() or m.islnk():
                    raise ApiError(422, "unsafe_archive_member", f"archive member {m.name!r} is a link; send the files themselves")
                if m.ischr() or m.isblk() or m.isfifo() or m.isdev():
                    raise ApiError(422, "unsafe_archive_member", f"archive member {m.name!r} is a device or FIFO")
                if m.isdir() or not name:
                    continue
                if not m.isreg():
                    raise ApiError(422, "unsafe_archive_member", f"archive member {m.name!r} is not a regular file")
                f = tar.extractfile(m)  # (bounded: the whole archive was inflated within its limit)
                files[name] = f.read() if f is not None else b""
        except tarfile.TarError as e:
            raise ApiError(400, "invalid_archive", f"the tar archive is damaged: {e}") from None
    return files


def select_files(files: dict[str, bytes]) -> dict[str, bytes]:
    """What the CLI's folder walk would lint (and the configs it would read) among ``files``: the default excludes,
    the config's exclude/include and the archive's .gitignore files, as analyzer.discovery applies them."""
    rules = FileRules()
    config = _root_config(files)
    if config is not None:
        name, data = config
        try:
            cfg = from_toml(data, "/" + name)  # (as the CLI reads that file: a standalone one may hold [tool.thunder-lint])
        except ConfigError as e:
            raise ApiError(422, "invalid_config", str(e)) from None
        rules = cfg.file_rules()
    # the archive's own .gitignore files, as the CLI's walk reads them (its root is "/", above it nothing counts)
    texts = {"/" + name: data for name, data in files.items() if name.rsplit("/", 1)[-1] == ".gitignore"}
    ignored = GitIgnored(floor="/", read=lambda p: texts[p].decode("utf-8", "replace") if p in texts else None) \
        if rules.respect_gitignore and texts else None
    out = {}
    for name, data in files.items():
        base = name.rsplit("/", 1)[-1]
        if base in CONFIG_NAMES:
            out[name] = data
            continue
        if base == ".gitignore" or _excluded(name, rules) or (ignored is not None and ignored.ignores_within("/" + name)):
            continue
        if rules.included.matches(name, whole_only=True):
            out[name] = data
    return out


def _root_config(files: dict[str, bytes]):
    for name in (*STANDALONE_NAMES, "pyproject.toml"):
        if name in files:
            try:
                data = tomllib.loads(files[name].decode("utf-8"))
            except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
                if name == "pyproject.toml":
                    continue  # the endpoint reports a broken config of ours as the JSON request would
                raise ApiError(422, "invalid_config", f"{name}: {e}") from None
            tool = data.get("tool")
            if name != "pyproject.toml" or isinstance(tool, dict) and isinstance(tool.get("thunder-lint"), dict):
                return name, data
    return None


def _excluded(name: str, rules) -> bool:
    parts = name.split("/")
    return any(rules.excluded.matches("/".join(parts[:i]), whole_only=True) for i in range(1, len(parts) + 1))


def request_body(files: dict[str, bytes], query: dict[str, str]) -> bytes:
    body: dict = {"files": [{"path": name, "content_base64": base64.b64encode(data).decode("ascii")}
                            for name, data in sorted(files.items())]}
    for key in _LIST_FIELDS:
        if key in query:
            body[key] = [v.strip() for v in query[key].split(",") if v.strip()]
    for key in _BOOL_FIELDS:
        if key in query:
            value = query[key].strip().lower()
            if value not in ("true", "false", "1", "0"):
                raise ApiError(422, "invalid_request", f"query parameter {key}={query[key]!r}: expected true or false")
            body[key] = value in ("true", "1")
    if "target" in query:
        body["target"] = query["target"]
    return json.dumps(body).encode("utf-8")


class ArchiveBodyMiddleware:
    """Turns ``POST /analyze`` with a gzip'd tar body into the JSON request (see the module's docstring).
    Sits inside BodyLimitMiddleware, which limits an archive's raw bytes by ``max_archive_bytes``."""

    def __init__(self, app, settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope, receive, send):
        if not is_archive_request(scope):
            return await self.app(scope, receive, send)
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        s = self.settings
        state = scope.setdefault("state", {})
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        try:
            raw = inflate(b"".join(chunks), s.max_archive_inflated_bytes)
            files = select_files(read_members(raw))
            check_limits(files, s.max_archive_files, s.max_archive_file_bytes)
            body = request_body(files, query)
        except ApiError as e:
            state["error_code"] = e.code
            return await send_json(send, e.status, error_body(e.code, e.message, state.get("request_id"), status=e.status))
        state["archive"] = True  # the endpoint applies the archive limits, not the per-request ones
        rest = {k: v for k, v in query.items() if k not in (*_LIST_FIELDS, *_BOOL_FIELDS, "target")}
        headers = [(k, v) for k, v in scope.get("headers", ()) if k not in (b"content-type", b"content-length", b"content-encoding")]
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        inner = dict(scope, headers=headers, query_string=urlencode(rest).encode("latin-1"))
        sent = [False]

        async def json_receive():
            if sent[0]:
                return await receive()
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(inner, json_receive, send)
