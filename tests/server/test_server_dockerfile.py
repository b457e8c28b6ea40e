"""The Dockerfile, checked by reading (no container engine here): it installs exactly the service's
dependencies (pyproject's, minus torch), the package with --no-deps, only the service's sources, and
serves on port 8000 as a non-root user. (Its install steps were also run by hand in a fresh venv.)"""

from __future__ import annotations

import re
import shlex
import tomllib

from server_helpers import REPO


def _instructions():
    text = (REPO / "Dockerfile").read_text()
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_dockerfile_installs_only_the_service_dependencies():
    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(d) for d in project["dependencies"] + project["optional-dependencies"]["server"]]
    runs = [i.removeprefix("RUN ").strip() for i in _instructions() if i.startswith("RUN ")]
    installs = [shlex.split(cmd) for run in runs for cmd in run.split("&&") if cmd.strip().startswith("pip install")]
    dependency_install = [a for a in installs if "--no-deps" not in a]
    assert len(dependency_install) == 1
    pins = [Requirement(a) for a in dependency_install[0][2:] if not a.startswith("-")]
    assert sorted(p.name for p in pins) == sorted(w.name for w in wanted)
    for pin in pins:  # each pinned exactly, to a version pyproject's range admits
        (spec,) = pin.specifier
        assert spec.operator == "==", pin
        assert next(w for w in wanted if w.name == pin.name).specifier.contains(spec.version), pin
    assert any(a[2:] == ["--no-deps", "."] for a in installs)
    assert not any("torch" in " ".join(a) for a in installs)


def test_dockerfile_pins_its_base_image_and_runs_as_a_numeric_user():
    instructions = _instructions()
    base = next(i for i in instructions if i.startswith("FROM ")).split()[1]
    assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+", base), base  # a patch release and a Debian release
    user = [i for i in instructions if i.startswith("USER ")][-1].split()[1]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) > 0 and (not gid or gid.isdigit()), user  # runAsNonRoot checks a UID
    assert f"--uid {uid}" in " ".join(instructions)


def test_dockerfile_copies_only_the_service_sources_and_serves_on_8000():
    instructions = _instructions()
    copied = {source for i in instructions if i.startswith("COPY ") for source in i.split()[1:-1]}
    assert copied == {"pyproject.toml", "README.md", "analyzer", "rules", "server"}
    cmd = next(i for i in instructions if i.startswith("CMD "))
    assert "thunder-lint" in cmd and '"serve"' in cmd and '"0.0.0.0"' in cmd and '"8000"' in cmd
    assert "EXPOSE 8000" in instructions
    user = [i for i in instructions if i.startswith("USER ")]
    assert user and user[-1] != "USER root"
    ignore = (REPO / ".dockerignore").read_text().split()
    assert ignore[ignore.index("*") + 1:].count("!server/") == 1  # an allow-list: nothing else gets in
