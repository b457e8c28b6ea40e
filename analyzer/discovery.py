"""Which files a run lints.

Named files are linted whatever their suffix; folders are walked for ``*.py``/``*.pyi``, skipping what is
never source (VCS folders, caches, virtual environments, build output). Symlinked folders are followed
once: the real path of every folder is remembered, so a symlink loop ends the walk instead of hanging it.
Problems (a path that does not exist, a broken link, a loop) are returned as messages, never raised.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from dataclasses import dataclass, field

SOURCE_SUFFIXES = (".py", ".pyi")
SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "_darcs", ".jj",
        "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".thunder-lint-cache", ".hypothesis",
        ".tox", ".nox", ".venv", "venv", ".eggs", "node_modules", "site-packages",
        "build", "dist", "_build", "buck-out", ".ipynb_checkpoints", ".direnv", ".pants.d",
    }
)


@dataclass
class Discovered:
    files: list[str] = field(default_factory=list)  # display paths, in a stable order
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, why it cannot be linted)


def _is_venv(path: str) -> bool:
    # Any virtual environment, whatever its name, has a pyvenv.cfg at its top.
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def _excluded(name: str, rel: str, exclude: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pat) or fnmatch.fnmatchcase(rel, pat) for pat in exclude)


def _force_excluded(path: str, exclude: tuple[str, ...], root: str | None) -> bool:
    """Whether a named path, or a folder above it inside the project, matches ``exclude``."""
    base = os.path.abspath(root or os.getcwd())
    rel = os.path.relpath(os.path.abspath(path), base)
    if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir:
        return _excluded(os.path.basename(os.path.abspath(path)), "", exclude)  # outside the project: the name only
    parts = rel.split(os.sep)
    return any(_excluded(parts[i - 1], "/".join(parts[:i]), exclude) for i in range(1, len(parts) + 1))


def discover(paths: list[str] | tuple[str, ...], *, exclude: tuple[str, ...] = (), root: str | None = None,
             force_exclude: bool = False) -> Discovered:
    """Files under ``paths``; ``exclude`` globs match a name, or a path relative to ``root`` (the project).

    Paths named explicitly are linted even when ``exclude`` matches them, unless ``force_exclude``: then
    they are skipped too, as pre-commit (which names every staged file) needs for the config to hold.
    """
    out = Discovered()
    seen_files: set[str] = set()

    def add_file(path: str) -> None:
        key = os.path.abspath(path)
        if key not in seen_files:
            seen_files.add(key)
            out.files.append(path)

    for given in paths:
        path = os.path.normpath(given)
        if force_exclude and exclude and _force_excluded(path, exclude, root):
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
            _walk(path, out, add_file, exclude, root)
        else:
            add_file(path)  # named explicitly: linted whatever its suffix; reading decides the rest
    return out


def _why(e: OSError) -> str:
    import errno

    if e.errno == errno.ELOOP:
        return "symbolic link loop"
    return e.strerror or str(e)


def _walk(top: str, out: Discovered, add_file, exclude: tuple[str, ...], root: str | None) -> None:
    base = os.path.abspath(root) if root else os.path.abspath(top)
    visited: set[str] = set()
    stack = [top]
    while stack:
        folder = stack.pop()
        real = os.path.realpath(folder)
        if real in visited:
            continue  # reached again through a symlink: a loop or a duplicate
        visited.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as e:
            out.problems.append((folder, f"cannot list folder: {_why(e)}"))
            continue
        subfolders = []
        for entry in entries:
            path = entry.path if folder != "." else entry.name
            rel = os.path.relpath(os.path.abspath(path), base).replace(os.sep, "/") if exclude else ""
            if exclude and _excluded(entry.name, rel, exclude):
                continue
            try:
                is_dir = entry.is_dir()  # follows symlinks
            except OSError as e:
                if entry.name.endswith(SOURCE_SUFFIXES):
                    out.problems.append((path, _why(e)))
                continue
            if is_dir:
                if entry.name in SKIPPED_DIRS or entry.name.endswith(".egg-info") or _is_venv(path):
                    continue
                subfolders.append(path)
            elif entry.name.endswith(SOURCE_SUFFIXES):
                if entry.is_symlink() and not os.path.exists(path):
                    try:
                        os.stat(path)
                        reason = "broken symbolic link"
                    except OSError as e:
                        reason = _why(e) if e.errno != 2 else "broken symbolic link (its target does not exist)"
                    out.problems.append((path, reason))
                    continue
                add_file(path)
        stack.extend(reversed(subfolders))  # depth-first in name order
