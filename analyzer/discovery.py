"""Which files a run lints, after ruff's conventions.

Named files are linted whatever their suffix. Folders are walked for the files ``include`` matches
(``*.py``, ``*.pyi``, ``*.ipynb`` by default), skipping what ``exclude`` matches (by default what is never
source: VCS folders, caches, virtual environments, build output; the config's ``exclude`` replaces that list,
``extend-exclude`` adds to it) and, unless ``respect-gitignore = false``, what the repository's ``.gitignore``
files, ``.git/info/exclude`` and the user's global git excludes ignore. Globs are read as ruff reads them
(analyzer/globs.py). Symlinked folders are followed once: the real path of every folder is remembered, so a
symlink loop ends the walk instead of hanging it. Problems (a path that does not exist, a broken link, a loop)
are returned as messages, never raised.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from functools import cached_property

from .globs import GlobSet

SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")
# ruff's default exclude, plus this tool's own cache and a few more build/cache folders
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".svn", "_darcs", ".jj", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".thunder-lint-cache",
    ".hypothesis", ".tox", ".venv", ".vscode", "__pypackages__", "__pycache__", "_build", "buck-out", "build",
    "dist", "node_modules", "site-packages", "venv", "*.egg-info",
)
DEFAULT_INCLUDE = ("*.py", "*.pyi", "*.ipynb")  # notebooks: analyzer/notebook.py
SKIPPED_DIRS = frozenset(p for p in DEFAULT_EXCLUDE if "*" not in p)  # (kept for callers that name folders)


@dataclass(frozen=True)
class FileRules:
    """What a folder walk takes: the config's exclude/extend-exclude/include/extend-include/respect-gitignore."""

    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    include: tuple[str, ...] = DEFAULT_INCLUDE
    extend_include: tuple[str, ...] = ()
    respect_gitignore: bool = True

    # built once per FileRules, on first use (cached_property writes the instance dict, so frozen is fine)
    @cached_property
    def excluded(self) -> GlobSet:
        return GlobSet(self.exclude + self.extend_exclude)

    @cached_property
    def included(self) -> GlobSet:
        return GlobSet(self.include + self.extend_include)


@dataclass
class Discovered:
    files: list[str] = field(default_factory=list)  # display paths, in a stable order
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, why it cannot be linted)


def _is_venv(path: str) -> bool:
    # Any virtual environment, whatever its name, has a pyvenv.cfg at its top.
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def _rel(path: str, base: str) -> str:
    return os.path.relpath(os.path.abspath(path), base).replace(os.sep, "/")


def _force_excluded(path: str, rules: FileRules, root: str | None, ignored) -> bool:
    """Whether a named path, or a folder above it inside the project, is excluded or git-ignored."""
    base = os.path.abspath(root or os.getcwd())
    rel = _rel(path, base)
    if rel in (".", "..") or rel.startswith("../"):
        return rules.excluded.matches_name(os.path.basename(os.path.abspath(path)))  # outside: the name only
    if rules.excluded.matches(rel):
        return True
    return ignored is not None and ignored.ignores(os.path.abspath(path), os.path.isdir(path))


def discover(paths: list[str] | tuple[str, ...], *, exclude: tuple[str, ...] = (), root: str | None = None,
             force_exclude: bool = False, rules: FileRules | None = None) -> Discovered:
    """Files under ``paths``. ``rules`` (the config's; default: ruff's defaults without .gitignore) say what a
    folder walk takes; ``exclude`` adds globs to it (extend-exclude). Globs match a name, or a path relative to
    ``root`` (the project).

    Paths named explicitly are linted even when excluded or git-ignored, unless ``force_exclude``: then they
    are skipped too, as pre-commit (which names every staged file) needs for the config to hold.
    """
    from dataclasses import replace

    rules = rules or FileRules(respect_gitignore=False)
    if exclude:
        rules = replace(rules, extend_exclude=rules.extend_exclude + tuple(exclude))
    base = os.path.abspath(root or os.getcwd())
    ignored = GitIgnored() if rules.respect_gitignore else None
    out = Discovered()
    seen_files: set[str] = set()

    def add_file(path: str, absolute: str | None = None) -> None:
        key = absolute or os.path.abspath(path)
        if key not in seen_files:
            seen_files.add(key)
            out.files.append(path)

    for given in paths:
        path = os.path.normpath(given)
        if force_exclude and _force_excluded(path, rules, root, ignored):
            continue
        try:
            st = os.stat(path)
        except FileNotFoundError:
            if os.path.islink(path):
                out.problems.append((path, "broken symbolic link (its target does not exist)"))
            else:
                out.problems.append((path, "no such file or directory"))
            continue
        except OSError as e:
            out.problems.append((path, _why(e)))
            continue
        if stat.S_ISDIR(st.st_mode):
            walk_ignored = ignored
            if ignored is not None and ignored.ignores(os.path.abspath(path), True):
                # A folder named on the command line is linted even when git ignores it (a corpus, a vendored
                # tree): the ignore files above it do not apply inside, its own do (as ruff's walk does).
                walk_ignored = GitIgnored(floor=os.path.abspath(path))
            _walk(path, out, add_file, rules, base if root else os.path.abspath(path), walk_ignored)
        else:
            add_file(path)  # named explicitly: linted whatever its suffix; reading decides the rest
    return out


class GitIgnored:
    """git's ignore rules for the folders walked: each folder's ``.gitignore`` (a deeper file's decision wins),
    the repository's ``.git/info/exclude`` and the user's global excludes file (``core.excludesFile``, else
    ``$XDG_CONFIG_HOME/git/ignore``). Folders above a walk's top, up to the repository root, count too."""

    def __init__(self, floor: str | None = None, read=None):
        self._specs: dict[str, list] = {}  # folder -> [(base folder, PathSpec)] from the root down
        self.floor = floor  # no ignore file above this folder counts (None: up to the repository root)
        # read(path) -> the text of an ignore file, or None: the file system by default; the service passes a
        # submitted archive's files (with floor "/" its root)
        self._read = read or _read_text
        self._on_disk = read is None  # (a given tree never looks at the disk for .git folders)

    def _spec_of(self, path: str):
        text = self._read(path)
        if text is None:
            return None
        import pathspec  # only where an ignore file exists: it costs ~15 ms of a small run's start-up

        return pathspec.GitIgnoreSpec.from_lines(text.splitlines())

    def ignores_within(self, path: str) -> bool:
        """Is ``path`` or a folder above it, up to the floor, ignored (a folder ignored hides what is in it)? For
        a tree given as names, where no walk stops at an ignored folder."""
        folder = os.path.dirname(path)
        while folder != self.floor and folder != os.path.dirname(folder):
            if self.ignores(folder, True):
                return True
            folder = os.path.dirname(folder)
        return self.ignores(path, False)

    def chain(self, folder: str) -> list:
        got = self._specs.get(folder)
        if got is not None:
            return got
        parent = os.path.dirname(folder)
        if folder == self.floor:
            got = []
        elif (self._on_disk and os.path.isdir(os.path.join(folder, ".git"))) or parent == folder:
            got = self._top_specs(folder)  # the repository root (or the file system's): git's own files
        else:
            got = list(self.chain(parent))
        spec = self._spec_of(os.path.join(folder, ".gitignore"))
        if spec is not None:
            got = got + [(folder, spec)]
        self._specs[folder] = got
        return got

    def _top_specs(self, root: str) -> list:
        out = []
        for candidate in (_global_excludes_file(), os.path.join(root, ".git", "info", "exclude")):
            if candidate:
                spec = self._spec_of(candidate)
                if spec is not None:
                    out.append((root, spec))
        return out

    def ignores(self, path: str, is_dir: bool) -> bool:
        decision = None
        for base, spec in self.chain(os.path.dirname(path)):
            if path.startswith(base) and path[len(base):len(base) + 1] == os.sep:
                rel = path[len(base) + 1:].replace(os.sep, "/")  # (relpath's answer, without its cost)
            else:
                rel = os.path.relpath(path, base).replace(os.sep, "/")
            if rel.startswith("../"):
                continue
            result = spec.check_file(rel + "/" if is_dir else rel)
            if result.include is not None:
                decision = result.include
        return bool(decision)


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except (OSError, ValueError):  # missing (most folders have none), a folder of that name, unreadable
        return None


def _global_excludes_file() -> str | None:
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    for config in (os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config")):
        try:
            with open(config, encoding="utf-8", errors="replace") as f:
                for line in f:
                    key, _, value = line.strip().partition("=")
                    if key.strip().lower() == "excludesfile" and value.strip():
                        return os.path.expanduser(value.strip().strip('"'))
        except OSError:
            continue
    return os.path.join(xdg, "git", "ignore")


def _why(e: OSError) -> str:
    import errno

    if e.errno == errno.ELOOP:
        return "symbolic link loop"
    return e.strerror or str(e)


def _walk(top: str, out: Discovered, add_file, rules: FileRules, base: str, ignored: GitIgnored | None) -> None:
    visited: set[tuple[int, int]] = set()
    # (display path, path relative to base, absolute path) of each folder: an entry's are its folder's and its name
    # (worked out once per folder, not per entry: a big tree has thousands of entries)
    stack = [(top, _rel(top, base), os.path.abspath(top))]
    excluded, included = rules.excluded, rules.included
    while stack:
        folder, folder_rel, folder_abs = stack.pop()
        try:
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in visited:
                continue  # reached again through a symlink: a loop or a duplicate
            visited.add((st.st_dev, st.st_ino))
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as e:
            out.problems.append((folder, f"cannot list folder: {_why(e)}"))
            continue
        subfolders = []
        prefix = "" if folder_rel == "." else folder_rel + "/"
        for entry in entries:
            path = entry.path if folder != "." else entry.name
            rel = prefix + entry.name
            if excluded.matches_name(entry.name) or excluded.matches(rel, whole_only=True):
                continue
            try:
                is_dir = entry.is_dir()  # follows symlinks
            except OSError as e:
                if included.matches(rel, whole_only=True):
                    out.problems.append((path, _why(e)))
                continue
            absolute = os.path.join(folder_abs, entry.name)
            if ignored is not None and ignored.ignores(absolute, is_dir):
                continue
            if is_dir:
                if _is_venv(path):
                    continue
                subfolders.append((path, rel, absolute))
            elif included.matches(rel, whole_only=True):
                if entry.is_symlink() and not os.path.exists(path):
                    try:
                        os.stat(path)
                        reason = "broken symbolic link"
                    except OSError as e:
                        reason = _why(e) if e.errno != 2 else "broken symbolic link (its target does not exist)"
                    out.problems.append((path, reason))
                    continue
                add_file(path, absolute)
        stack.extend(reversed(subfolders))  # depth-first in name order
