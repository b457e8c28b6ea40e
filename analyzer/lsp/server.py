"""The Language Server: LSP over stdio on pygls, diagnostics as the user types, quick fixes, docs on hover.

Two threads. The event loop (pygls) reads messages, keeps the open documents and answers; every piece of
analysis (linting, the project index, fixes) runs on one analysis thread, in the order it was asked
for, so the projects need no locks and a slow lint never stops the server from reading the next
keystroke. A change waits ``debounceMs`` of quiet before it is linted; a result for a version the
editor has already moved past is dropped, never published.

Nothing a document contains can stop the server: unparsable text is a TL001 finding, text over the
size limit a TL002, and an internal error while analyzing a document is logged (``window/logMessage``)
and that document skipped; the server goes on with the others.
"""

from __future__ import annotations

import asyncio
import logging
import os
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from ..diagnostics import Diagnostic
from ..version import __version__
from . import actions
from .analysis import fix_document, lint_document, with_fixes
from .convert import lsp_diagnostic, path_of
from .projects import Project, Projects
from .rule_docs import hover_markdown
from .settings import SECTION, EditorSettings, parse_settings
from .text import UTF16, TextDocument

log = logging.getLogger("thunder-lint.lsp")

SCAN_STEP_FILES = 25  # files summarized per analysis job while a project is scanned: lints queue between them
_DONE = object()
_NO_RELATED = frozenset({"TL001", "TL002"})  # a file that did not parse has no compiled functions to point at


def _key(finding: Diagnostic) -> tuple:
    """A finding's identity within one lint (the engine reports one finding per code and span)."""
    return finding.code, finding.line, finding.column, finding.end_line, finding.end_column


class _Protocol(LanguageServerProtocol):
    """pygls keeps a copy of each open document too, and splits its lines with ``str.splitlines``, which
    also breaks at ``\\f``, ``\\v``, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028`` and ``\\u2029``: with one of those in a
    file, its incremental edits land in the wrong place. LSP breaks lines only at ``\\n``, ``\\r\\n`` and
    ``\\r``. The server keeps the documents itself (text.py); these builtins only hand over to it."""

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


@dataclass
class Published:
    """A document's findings for one version, as published."""

    doc: TextDocument  # the text that was linted
    findings: list[Diagnostic]
    diagnostics: list[types.Diagnostic]  # the same, in LSP's terms (same order)
    facts: tuple | None
    fixed: tuple | None = None  # ((unsafe, facts), the text with every fix applied), once asked for
    fixes: dict | None = None  # finding key -> its fixes, once a code action asked for them
    commentable: frozenset | None = None  # lines a `# noqa` can go on, once a code action asked
    result_id: str = ""  # pull diagnostics: names this result (a client sends it back; unchanged -> "unchanged")


@dataclass
class _JobResult:
    published: Published | None = None
    error: str | None = None
    relint: list[str] = field(default_factory=list)  # other documents whose project facts changed
    scan: Project | None = None  # a new project to scan
    problems: list[str] = field(default_factory=list)  # a new project's config problems


class ThunderLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("thunder-lint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=_Protocol)
        # event loop side
        self.documents: dict[str, TextDocument] = {}
        self.published: dict[str, Published] = {}
        self.pending: dict[str, asyncio.Future] = {}
        self.editor = EditorSettings()
        self.encoding = UTF16
        self.document_changes = False
        self.markdown = True
        self.pull_configuration = False
        self.watch_files = False
        self.pull_diagnostics = False  # the client pulls (textDocument/diagnostic): then nothing is pushed
        self.diagnostic_refresh = False  # ... and it can be told to pull again (workspace/diagnostic/refresh)
        self._results = 0
        self.shutdown_received = False
        self.exit_code: int | None = None
        self._startup_problems: list[str] = []
        # analysis thread side
        self.analysis = ThreadPoolExecutor(1, thread_name_prefix="thunder-lint-analysis")
        self.projects = Projects()
        self._open_paths: dict[str, str | None] = {}  # uri -> path, of documents linted and still open
        self._linted_facts: dict[str, tuple | None] = {}
        self._register()

    # --- wiring ---------------------------------------------------------------------------------
    def _register(self) -> None:
        def f(method: str, options=None):
            # pygls marks the registered function with attributes, which a bound method cannot take
            def register(bound):
                if asyncio.iscoroutinefunction(bound):
                    async def handler(params):
                        return await bound(params)
                else:
                    def handler(params):
                        return bound(params)
                self.feature(method, options)(handler)
            return register

        f(types.INITIALIZE)(self.on_initialize)
        f(types.INITIALIZED)(self.on_initialized)
        f(types.SHUTDOWN)(self.on_shutdown)
        f(types.EXIT)(self.on_exit)
        f(types.TEXT_DOCUMENT_DID_OPEN)(self.on_open)
        f(types.TEXT_DOCUMENT_DID_CHANGE)(self.on_change)
        f(types.TEXT_DOCUMENT_DID_SAVE)(self.on_save)
        f(types.TEXT_DOCUMENT_DID_CLOSE)(self.on_close)
        f(types.TEXT_DOCUMENT_HOVER)(self.on_hover)
        # pull diagnostics (LSP 3.17): a document's findings depend on other files (the project index)
        f(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
            identifier="thunder-lint", inter_file_dependencies=True, workspace_diagnostics=False))(self.on_diagnostic)
        f(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, actions.FIX_ALL_KIND]))(self.on_code_action)
        f(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(self.on_configuration)
        f(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(self.on_watched_files)
        f(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(self.on_folders)

    def _log(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def _show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))
        self._log(message, kind)

    def _in_analysis(self, fn, *args):
        return asyncio.get_running_loop().run_in_executor(self.analysis, fn, *args)

    # --- lifecycle ------------------------------------------------------------------------------
    def on_initialize(self, params: types.InitializeParams) -> None:
        chosen = self.workspace.position_encoding  # pygls picks from the client's offer (an enum member)
        self.encoding = str(getattr(chosen, "value", chosen) or UTF16)
        caps = params.capabilities
        ws = caps.workspace
        self.document_changes = bool(ws and ws.workspace_edit and ws.workspace_edit.document_changes)
        self.pull_configuration = bool(ws and ws.configuration)
        self.watch_files = bool(ws and ws.did_change_watched_files and ws.did_change_watched_files.dynamic_registration)
        # As ruff's server: a client that can pull diagnostics pulls them, and none are pushed (it would show both)
        self.pull_diagnostics = bool(caps.text_document and caps.text_document.diagnostic)
        self.diagnostic_refresh = bool(ws and ws.diagnostics and ws.diagnostics.refresh_support)
        hover = caps.text_document.hover if caps.text_document else None
        formats = hover.content_format if hover else None
        self.markdown = not formats or types.MarkupKind.Markdown in formats
        self.editor, problems = parse_settings(params.initialization_options)
        self._startup_problems = [f"thunder-lint: initializationOptions: {p}" for p in problems]
        self.analysis.submit(self.projects.reset, self.editor, self._folders())

    def _folders(self) -> list[str]:
        from pygls.uris import to_fs_path

        paths = [to_fs_path(folder.uri) for folder in self.workspace.folders.values()]
        if not paths and self.workspace.root_path:
            paths = [self.workspace.root_path]
        return [p for p in paths if p]

    async def on_initialized(self, params: types.InitializedParams) -> None:
        for problem in self._startup_problems:
            self._show(problem)
        if self.watch_files:
            watchers = [types.FileSystemWatcher(glob_pattern=g) for g in ("**/*.py", "**/*.pyi", "**/*.ipynb", "**/pyproject.toml")]
            try:
                await self.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                    id="thunder-lint-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))
            except Exception as e:  # the client refused: the index then follows the editor's buffers only
                self._log(f"thunder-lint: could not watch files: {e}", types.MessageType.Warning)
        if self.pull_configuration:
            await self._pull_configuration()

    def on_shutdown(self, params) -> None:
        self.shutdown_received = True
        for task in self.pending.values():
            task.cancel()
        self.pending.clear()
        self.analysis.shutdown(wait=False, cancel_futures=True)

    def on_exit(self, params) -> None:
        self.exit_code = 0 if self.shutdown_received else 1

    # --- settings -------------------------------------------------------------------------------
    async def _pull_configuration(self) -> None:
        try:
            got = await self.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)]))
        except Exception as e:
            self._log(f"thunder-lint: workspace/configuration failed: {e}", types.MessageType.Warning)
            return
        raw = got[0] if isinstance(got, (list, tuple)) and got else None
        if raw:
            self._apply_settings(raw, "workspace/configuration")

    async def on_configuration(self, params: types.DidChangeConfigurationParams) -> None:
        if params.settings:
            self._apply_settings(params.settings, "didChangeConfiguration")
        elif self.pull_configuration:
            await self._pull_configuration()

    def _apply_settings(self, raw, where: str) -> None:
        settings, problems = parse_settings(raw)
        for p in problems:
            if p.startswith("unknown setting"):  # another tool's key in a shared settings object: not worth a popup
                self._log(f"thunder-lint: {where}: {p}", types.MessageType.Warning)
            else:
                self._show(f"thunder-lint: {where}: {p}")
        if settings != self.editor:
            self.editor = settings
            self._reset_projects()

    def _reset_projects(self) -> None:
        self.analysis.submit(self.projects.reset, self.editor, self._folders())
        for uri in list(self.documents):
            self.schedule(uri, 0)

    def on_folders(self, params: types.DidChangeWorkspaceFoldersParams) -> None:
        self._reset_projects()  # pygls has updated self.workspace.folders already

    def on_watched_files(self, params: types.DidChangeWatchedFilesParams) -> None:
        paths = [p for p in (path_of(c.uri) for c in params.changes) if p]
        if any(os.path.basename(p) == "pyproject.toml" for p in paths):
            self._reset_projects()  # a config changed: every project is read again
            return
        if paths:
            asyncio.ensure_future(self._files_changed(paths))

    async def _files_changed(self, paths: list[str]) -> None:
        try:
            relint = await self._in_analysis(self._files_changed_job, paths)
        except Exception:
            self._log(f"thunder-lint: internal error while updating the project index:\n{traceback.format_exc()}",
                      types.MessageType.Error)
            return
        for uri in relint:
            self.schedule(uri, 0)

    # --- documents ------------------------------------------------------------------------------
    def on_open(self, params: types.DidOpenTextDocumentParams) -> None:
        td = params.text_document
        self.documents[td.uri] = TextDocument(td.uri, td.text, td.version, td.language_id)
        self.schedule(td.uri, 0)

    def on_change(self, params: types.DidChangeTextDocumentParams) -> None:
        doc = self.documents.get(params.text_document.uri)
        if doc is None:
            self._log(f"thunder-lint: change to a document that is not open: {params.text_document.uri}",
                      types.MessageType.Warning)
            return
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                r = change.range
                doc.apply_change(change.text, (r.start.line, r.start.character), (r.end.line, r.end.character),
                                 self.encoding)
            else:
                doc.apply_change(change.text)
        doc.version = params.text_document.version
        self.schedule(doc.uri, self.editor.debounce_ms)

    def on_save(self, params: types.DidSaveTextDocumentParams) -> None:
        if params.text_document.uri in self.documents:
            self.schedule(params.text_document.uri, 0)

    def on_close(self, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.documents.pop(uri, None)
        self.published.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        asyncio.ensure_future(self._closed(uri))

    async def _closed(self, uri: str) -> None:
        try:
            relint = await self._in_analysis(self._closed_job, uri)
        except Exception:
            self._log(f"thunder-lint: internal error after closing {uri}:\n{traceback.format_exc()}",
                      types.MessageType.Error)
            return
        for other in relint:
            self.schedule(other, 0)

    # --- linting --------------------------------------------------------------------------------
    def schedule(self, uri: str, delay_ms: int) -> None:
        """Lint ``uri`` after ``delay_ms`` of quiet; a newer call replaces one still waiting. (A lint already
        running is left to finish: its result is dropped if the text moved on, its effects on the
        project index are kept.)"""
        if self.shutdown_received:
            return
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.pending[uri] = asyncio.ensure_future(self._lint_after(uri, delay_ms))

    async def _lint_after(self, uri: str, delay_ms: int) -> None:
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000)
        if self.pending.get(uri) is asyncio.current_task():
            del self.pending[uri]  # from here on it runs to the end
        await self.lint_now(uri)

    async def lint_now(self, uri: str, refresh: bool = True) -> Published | None:
        """Lint the document's current text and publish the result, unless it changed meanwhile. A client that
        pulls is told to pull again (``refresh``) when the findings changed: another file changed the facts."""
        doc = self.documents.get(uri)
        if doc is None or self.shutdown_received:
            return None
        snapshot = TextDocument(uri, doc.text, doc.version, doc.language_id)
        others = {u: TextDocument(u, d.text, d.version) for u, d in self.documents.items() if u != uri}
        try:
            job = await self._in_analysis(self._lint_job, snapshot, others, self.editor, self.encoding)
        except RuntimeError:  # the analysis thread is shut down: the server is stopping
            return None
        if self.shutdown_received:
            return None
        for problem in job.problems:
            self._show(f"thunder-lint: {problem}")
        if job.scan is not None:
            asyncio.ensure_future(self._scan(job.scan))
        for other in job.relint:
            if other != uri:
                self.schedule(other, 0)
        if job.error is not None:
            self._log(f"thunder-lint: internal error while linting {uri} (the document is skipped):\n{job.error}",
                      types.MessageType.Error)
            return None
        current = self.documents.get(uri)
        if current is None or current.version != snapshot.version or current.text != snapshot.text:
            return None  # changed meanwhile: the lint of the newer text is scheduled already
        before = self.published.get(uri)
        self._results += 1
        job.published.result_id = str(self._results)
        self.published[uri] = job.published
        if not self.pull_diagnostics:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, diagnostics=job.published.diagnostics, version=snapshot.version))
        elif refresh and self.diagnostic_refresh and (before is None or before.diagnostics != job.published.diagnostics):
            asyncio.ensure_future(self._refresh())
        return job.published

    async def _refresh(self) -> None:
        try:
            await self.workspace_diagnostic_refresh_async(None)
        except Exception as e:  # the client refused or went away: it pulls again on its next change
            self._log(f"thunder-lint: workspace/diagnostic/refresh failed: {e}", types.MessageType.Warning)

    async def on_diagnostic(self, params: types.DocumentDiagnosticParams):
        """textDocument/diagnostic: the findings of the document's current text (linted now if need be)."""
        pub = await self.current(params.text_document.uri, refresh=False)
        if pub is None:  # not open (or the server is stopping): nothing to say about it
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        if params.previous_result_id == pub.result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=pub.result_id)
        return types.RelatedFullDocumentDiagnosticReport(items=pub.diagnostics, result_id=pub.result_id)

    async def current(self, uri: str, refresh: bool = True) -> Published | None:
        """The findings for the document's current version (linted now if what was published is older)."""
        doc = self.documents.get(uri)
        if doc is None:
            return None
        pub = self.published.get(uri)
        if pub is not None and pub.doc.version == doc.version and pub.doc.text == doc.text:
            return pub
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        return await self.lint_now(uri, refresh)

    async def _scan(self, project: Project) -> None:
        """Index every file of a new project, a few per job, then re-lint what the index changed."""
        loop = asyncio.get_running_loop()
        steps = project.scan_steps(lambda m: loop.call_soon_threadsafe(self._log, m, types.MessageType.Warning))
        try:
            while await self._in_analysis(self._scan_step_job, project, steps):
                pass
            relint = await self._in_analysis(self._after_scan_job, project)
        except RuntimeError:  # shutting down
            return
        except Exception:
            self._log(f"thunder-lint: internal error while indexing {project.root}:\n{traceback.format_exc()}",
                      types.MessageType.Error)
            return
        if relint is None:
            return
        self._log(f"thunder-lint: indexed {len(project.summaries)} files under {project.root}")
        for uri in relint:
            self.schedule(uri, 0)

    # --- analysis thread --------------------------------------------------------------------------
    def _lint_job(self, doc: TextDocument, others: dict[str, TextDocument], editor: EditorSettings,
                  encoding: str) -> _JobResult:
        out = _JobResult()
        try:
            path = path_of(doc.uri)
            project, new = self.projects.for_path(path)
            if new:
                out.problems = list(project.problems)
                if project.indexed:
                    out.scan = project
            generation = project.generation
            # The lint takes the document's fresh summary into the index itself (analysis.lint_document). An
            # unparsable buffer keeps its last summary: half-typed code must not make the rest of the
            # project forget what this file compiles.
            linted = lint_document(doc, path, project)
            self._linted_facts[doc.uri] = linted.facts
            if path is not None:
                self._open_paths[doc.uri] = path
                if project.index is None:
                    project.rebuild()
                if project.generation != generation:
                    out.relint = self._facts_changed(project)
            site_cache: dict = {}
            diagnostics = [
                lsp_diagnostic(f, doc, encoding, docs_url=editor.rule_docs_url, open_docs=others, site_cache=site_cache,
                               compiled=project.compiled_at(path, f.line) if path and f.code not in _NO_RELATED else None)
                for f in linted.findings
            ]
            out.published = Published(doc, linted.findings, diagnostics, linted.facts)
        except Exception:
            out.error = traceback.format_exc()
        return out

    def _facts_changed(self, project: Project) -> list[str]:
        """Open documents of ``project`` whose facts in the index differ from those they were linted with."""
        out = []
        for uri, path in self._open_paths.items():
            if path is None or self.projects.existing(path) is not project:
                continue
            now = project.facts_for(path)
            if now is not None and now != self._linted_facts.get(uri):
                out.append(uri)
        return out

    def _closed_job(self, uri: str) -> list[str]:
        path = self._open_paths.pop(uri, None)
        self._linted_facts.pop(uri, None)
        if path is None:
            return []
        project, _ = self.projects.for_path(path)
        if project.closed(path):
            project.rebuild()
            return self._facts_changed(project)
        return []

    def _files_changed_job(self, paths: list[str]) -> list[str]:
        relint: list[str] = []
        for project in self.projects.all():
            if not project.indexed:
                continue
            changed = [project.path_changed_on_disk(p) for p in paths if project.contains(p)]
            if any(changed) and project.scanned:  # (a scan still running rebuilds at its end)
                project.rebuild()
                relint.extend(u for u in self._facts_changed(project) if u not in relint)
        return relint

    def _scan_step_job(self, project: Project, steps) -> bool:
        if self.projects.by_root.get(project.root) is not project:
            return False  # settings or configs changed since: a new project scans itself
        for _ in range(SCAN_STEP_FILES):
            if next(steps, _DONE) is _DONE:
                return False
        return True

    def _after_scan_job(self, project: Project) -> list[str] | None:
        if self.projects.by_root.get(project.root) is not project:
            return None
        project.rebuild()
        return self._facts_changed(project)

    def _actions_job(self, pub: Published, params: types.CodeActionParams, editor: EditorSettings,
                     encoding: str) -> list[types.CodeAction]:
        doc = pub.doc
        only = params.context.only
        out: list[types.CodeAction] = []
        if actions.kind_wanted(types.CodeActionKind.QuickFix, only):
            hits = [(f, d) for f, d in zip(pub.findings, pub.diagnostics) if actions.overlaps(d.range, params.range)]
            if hits and pub.commentable is None:
                pub.commentable = actions.comment_lines(doc.text) or frozenset()
            for finding, diag in hits:
                fixes = self._fixes_of(pub).get(_key(finding), ()) if actions.rule_has_fixes(finding.code) else ()
                out.extend(actions.quick_fixes(doc, finding, fixes, diag, encoding=encoding,
                                               document_changes=self.document_changes))
                noqa = actions.noqa_action(doc, finding, diag, pub.commentable, encoding=encoding,
                                           document_changes=self.document_changes)
                if noqa is not None and all(a.title != noqa.title for a in out):
                    out.append(noqa)
        # Fix-all costs a few lints of the file: computed when asked for by kind (e.g. on save), or next
        # to quick fixes, and kept for the document's version (clients ask again on every cursor move).
        asked = bool(only) and actions.kind_wanted(actions.FIX_ALL_KIND, only)
        if (asked or (not only and out)) and any(actions.rule_has_fixes(f.code) for f in pub.findings):
            path = path_of(doc.uri)
            project, _ = self.projects.for_path(path)
            # safe fixes only, unless the editor's `unsafeFixes` (else the config's `unsafe-fixes`) says otherwise
            unsafe = editor.unsafe_fixes if editor.unsafe_fixes is not None else bool(project.config.unsafe_fixes)
            key = (unsafe, pub.facts)
            if pub.fixed is None or pub.fixed[0] != key:
                pub.fixed = (key, fix_document(doc, path, project, pub.facts, unsafe))
            action = actions.fix_all_action(doc, pub.fixed[1], unsafe=unsafe, encoding=encoding,
                                            document_changes=self.document_changes)
            if action is not None:
                out.append(action)
        return out

    def _fixes_of(self, pub: Published) -> dict:
        """The fixes of the published findings, built the first time a code action asks (the published lint
        leaves them out: they cost a sixth of a lint and most findings are never acted on)."""
        if pub.fixes is None:
            path = path_of(pub.doc.uri)
            project, _ = self.projects.for_path(path)
            pub.fixes = {_key(f): f.fixes for f in with_fixes(pub.doc, path, project, pub.facts)}
        return pub.fixes

    # --- requests -------------------------------------------------------------------------------
    async def on_code_action(self, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        pub = await self.current(params.text_document.uri)
        if pub is None:
            return None
        try:
            return await self._in_analysis(self._actions_job, pub, params, self.editor, self.encoding) or None
        except RuntimeError:
            return None

    async def on_hover(self, params: types.HoverParams) -> types.Hover | None:
        pub = await self.current(params.text_document.uri)
        if pub is None:
            return None
        pos = (params.position.line, params.position.character)
        hits = [(f, d) for f, d in zip(pub.findings, pub.diagnostics)
                if (d.range.start.line, d.range.start.character) <= pos <= (d.range.end.line, d.range.end.character)]
        if not hits:
            return None
        parts, seen = [], set()
        for finding, _ in hits:
            key = (finding.code, finding.message)
            if key not in seen:
                seen.add(key)
                parts.append(hover_markdown(finding))
        d = hits[0][1]
        kind = types.MarkupKind.Markdown if self.markdown else types.MarkupKind.PlainText
        return types.Hover(contents=types.MarkupContent(kind=kind, value="\n\n---\n\n".join(parts)), range=d.range)
