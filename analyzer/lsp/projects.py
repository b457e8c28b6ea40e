"""The workspace's projects: which config a document lints under, and the project index over its files.

A document belongs to the project whose ``pyproject.toml`` with a ``[tool.thunder-lint]`` table is nearest
above it (found as the CLI finds it), else to the workspace folder that holds it, else to a project of
its own folder that indexes only the open documents in it. A project's index is built from every
source file under its root (read from disk once, in steps, on the server's one analysis thread), and
kept up to date one file at a time: an open document's summary comes from its buffer (unsaved text wins
over the disk), a closed file's from the disk when the editor says it changed.

Everything here runs on the analysis thread only; nothing needs a lock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..config import Config, ConfigError, find_pyproject, load_file
from ..file_pass import Settings
from ..file_reader import Unreadable, read_bytes
from ..notebook import source_of
from ..project.index import Compiled, ProjectIndex, module_name
from ..project.incremental import contribution
from .settings import EditorSettings, effective_settings

MAX_INDEXED_FILES = 20_000  # a workspace larger than this is indexed in part (and the log says so)
_NOT_SEEN = object()


def summary_of(text: str, path: str, module: str, jit_decorators=()) -> dict | None:
    """A file's part of the project index, from its text (None when it does not parse)."""
    from ..parsing import PARSE_ERRORS, parse
    from ..project.index import summarize
    from ..static.module_index import build_module_index

    try:
        tree = parse(text)
    except PARSE_ERRORS:
        return None
    return summarize(text, tree, build_module_index(tree), path, module, jit_decorators)


@dataclass
class Project:
    root: str | None  # None: documents that are not files (untitled buffers)
    config: Config
    settings: Settings
    indexed: bool  # whether the files under root are scanned into the index
    problems: list[str] = field(default_factory=list)  # config problems, reported once
    summaries: dict[str, dict] = field(default_factory=dict)  # abspath -> summary
    # abspath -> what the file contributes to the index (project_pass.contribution, as the CLI's cache keeps it):
    # the index is rebuilt only when one changes, and a document is re-linted only when its facts change
    contributions: dict[str, str] = field(default_factory=dict)
    buffers: dict[str, str] = field(default_factory=dict)  # abspath -> text of an open document
    index: ProjectIndex | None = None
    scanned: bool = False
    generation: int = 0  # how many times the index was rebuilt
    _facts: dict[str, tuple] = field(default_factory=dict)  # abspath -> facts, of this generation's index

    def module(self, path: str) -> str:
        return module_name(path, self.settings.root)

    # The index -------------------------------------------------------------------------------------
    def scan_steps(self, log) -> Iterator[None]:
        """Summarize every source file under root that is not open; one step per file."""
        from ..discovery import discover

        found = discover([self.root], root=self.config.root, rules=self.config.file_rules())
        files = found.files
        if len(files) > MAX_INDEXED_FILES:
            log(f"thunder-lint: {self.root} has {len(files)} source files; the project index covers the first "
                f"{MAX_INDEXED_FILES}")
            files = files[:MAX_INDEXED_FILES]
        for path in files:
            path = os.path.abspath(path)
            if path not in self.buffers:
                self._summarize_from_disk(path)
            yield
        self.scanned = True

    def _summarize_from_disk(self, path: str) -> None:
        try:
            text, _ = source_of(path, read_bytes(path))  # a notebook: its code cells
        except Unreadable:
            self._forget(path)
            return
        self.set_summary(path, summary_of(text, path, self.module(path), self.settings.jit_decorators))

    def set_summary(self, path: str, summary: dict | None) -> bool:
        """Record a file's summary (None: it has none now); whether its contribution changed (the index must be
        rebuilt)."""
        old = self.contributions.get(path)
        if summary is None:
            self.summaries.pop(path, None)
            self.contributions.pop(path, None)
            return old is not None
        self.summaries[path] = summary
        self.contributions[path] = contribution(summary)
        # a file whose text the index read (a wrapper's caller): its text counts, not only its summary
        return old != self.contributions[path] or (self.index is not None and self.index.read_text_of(path))

    def _forget(self, path: str) -> bool:
        return self.set_summary(path, None)

    def path_changed_on_disk(self, path: str) -> bool:
        """The editor says a file or folder changed, appeared or went away (an open document's buffer wins);
        whether the index must be rebuilt."""
        if os.path.isdir(path):  # a folder appeared (moved in, checked out): its files
            from ..discovery import discover

            found = discover([path], root=self.config.root, rules=self.config.file_rules()).files
            return any([self.path_changed_on_disk(os.path.abspath(f)) for f in found])
        if not path.endswith((".py", ".pyi", ".ipynb")):
            if os.path.exists(path):
                return False
            gone = [p for p in self.summaries if p.startswith(path + os.sep) and p not in self.buffers]
            for p in gone:  # a folder went away with its files
                self._forget(p)
            return bool(gone)
        if path in self.buffers:
            return False
        old = self.contributions.get(path)
        if os.path.isfile(path):
            self._summarize_from_disk(path)
        else:
            self._forget(path)
        return self.contributions.get(path) != old

    def closed(self, path: str) -> bool:
        """The document was closed: from now on the disk says what the file is."""
        self.buffers.pop(path, None)
        old = self.contributions.get(path)
        if self.indexed and os.path.isfile(path) and self.contains(path):
            self._summarize_from_disk(path)
        else:
            self._forget(path)
        return self.contributions.get(path) != old

    @property
    def assume_compiled(self) -> tuple[str, ...] | None:
        """`assume-compiled` as the index applies it. While a workspace is still being scanned, the library
        default (every module's forward linted as compiled when no compile call is found) waits: the compile
        call may be in a file not read yet. The scan's end rebuilds the index and re-lints what changed."""
        if self.indexed and not self.scanned and self.settings.assume_compiled is None:
            return ()
        return self.settings.assume_compiled

    def rebuild(self) -> None:
        self.index = ProjectIndex(list(self.summaries.values()), self.settings.root, self.assume_compiled,
                                  self.settings.target, texts=self.buffers)
        self._facts = {}
        self.generation += 1

    def facts_with(self, path: str, summary: dict) -> tuple | None:
        """Take an open document's fresh summary into the index (rebuilt if it changed), and return what the
        index then says about the document: it is linted once, with facts that know its new text."""
        if self.set_summary(path, summary) or self.index is None:
            self.rebuild()
        return self.facts_for(path)

    def facts_for(self, path: str) -> tuple | None:
        """What other files (and `assume-compiled`) say about ``path``; None before the index exists."""
        if self.index is None or path not in self.summaries:
            return None
        got = self._facts.get(path)
        if got is None:  # asked for every open document after each rebuild: answered once per index
            got = self._facts[path] = self.index.facts_for(self.summaries[path]["module"], path)
        return got

    def compiled_at(self, path: str, line: int) -> Compiled | None:
        """How the function holding ``line`` (1-based) is compiled, if the index says it is."""
        summary = self.summaries.get(path)
        if self.index is None or summary is None:
            return None
        best = None
        for qual, span in summary["functions"].items():
            start, end = span[0], span[1]
            if start <= line <= end and (best is None or end - start < best[1] - best[0]):
                best = (start, end, qual)
        if best is None:
            return None
        return self.index.compiled.get((summary["module"], best[2]))

    def contains(self, path: str) -> bool:
        if self.root is None:
            return False
        try:
            return os.path.commonpath([os.path.abspath(path), self.root]) == self.root
        except ValueError:
            return False


class Projects:
    """Finds (and creates) the project of each document; forgets them all when settings or configs change."""

    def __init__(self) -> None:
        self.by_root: dict[str | None, Project] = {}
        self._root_of_folder: dict[str, str | None] = {}
        self.folders: list[str] = []  # the workspace folders, as absolute paths
        self.editor = EditorSettings()

    def reset(self, editor: EditorSettings | None = None, folders: list[str] | None = None) -> None:
        if editor is not None:
            self.editor = editor
        if folders is not None:
            self.folders = [os.path.abspath(f) for f in folders]
        self.by_root.clear()
        self._root_of_folder.clear()

    def all(self) -> list[Project]:
        return list(self.by_root.values())

    def existing(self, path: str | None) -> Project | None:
        """The project ``path`` belongs to, if it has been created (creates nothing)."""
        if path is None:
            return self.by_root.get(None)
        root = self._root_of_folder.get(os.path.dirname(os.path.abspath(path)), _NOT_SEEN)
        return None if root is _NOT_SEEN else self.by_root.get(root)

    def for_path(self, path: str | None) -> tuple[Project, bool]:
        """The project of a document (None: not a file), and whether it was created just now."""
        if path is None:
            root = None
        else:
            folder = os.path.dirname(os.path.abspath(path))
            if folder not in self._root_of_folder:
                self._root_of_folder[folder] = self._root_for(folder)
            root = self._root_of_folder[folder]
        project = self.by_root.get(root)
        if project is not None:
            return project, False
        project = self.by_root[root] = self._new(root, path)
        return project, True

    def _root_for(self, folder: str) -> str:
        pyproject = find_pyproject(folder)
        if pyproject is not None:
            return os.path.dirname(pyproject)
        holders = [f for f in self.folders if _under(folder, f)]
        return max(holders, key=len) if holders else folder

    def _new(self, root: str | None, path: str | None) -> Project:
        problems = []
        config = None
        # Only a project that overlaps the workspace is scanned: a file opened from elsewhere (a library
        # under site-packages, /tmp) must not start a walk of everything above it.
        indexed = root is not None and any(_under(root, f) or _under(f, root) for f in self.folders)
        if root is not None:
            pyproject = os.path.join(root, "pyproject.toml")
            if find_pyproject(root) == pyproject:
                try:
                    config = load_file(pyproject)
                except ConfigError as e:
                    problems.append(f"{e}; linting with the default settings")
        if config is None:
            config = Config(root=root or os.getcwd())
        settings = effective_settings(config, self.editor)
        try:
            _check_selection(settings)
        except ValueError as e:
            problems.append(f"{config.source or 'settings'}: {e}; linting with every rule")
            config = Config(root=config.root, source=config.source)
            settings = effective_settings(config, EditorSettings())
        return Project(root, config, settings, indexed, problems)


def _check_selection(settings: Settings) -> None:
    from rules import RULES

    from ..selection import resolve

    resolve(list(RULES), settings.select, settings.ignore, settings.extend_select)
    for _, codes in settings.per_file_ignores:
        resolve(list(RULES), (), codes, ())


def _under(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:
        return False
