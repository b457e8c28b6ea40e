"""`thunder-lint run --observe [--verify]` on real torch.compile (CPU, inductor and user backends): findings at
the program's lines, counts, the static predictions, the verify verdicts, the report formats and the server."""
from __future__ import annotations

import json
import os

import pytest

import observe_programs as programs

torch = pytest.importorskip("torch")


def marker(source: str, tag: str) -> int:
    lines = [i for i, line in enumerate(source.splitlines(), 1) if line.rstrip().endswith(f"# <-{tag}")]
    assert len(lines) == 1, tag
    return lines[0]


def observe(tmp_path, source, *flags, capsys=None):
    """Run ``source`` as prog.py under `thunder-lint run --observe FLAGS`, in this process; (status, json report,
    the text summary lines)."""
    import torch._dynamo

    from analyzer.cli import main

    (tmp_path / "prog.py").write_text(source)
    here = os.getcwd()
    os.chdir(tmp_path)
    torch._dynamo.reset()
    from torch._dynamo.backends import registry

    registry._COMPILER_FNS.pop("tanh_is_sigmoid", None)  # a program's registered backend, from an earlier test
    try:
        status = main(["run", "--observe", *flags, "--format", "json", "-o", "report.json", "prog.py"])
    finally:
        os.chdir(here)
        torch._dynamo.reset()
    summary = capsys.readouterr().err if capsys is not None else ""
    return status, json.loads((tmp_path / "report.json").read_text()), summary


def found(report, code):
    return [d for d in report if d["code"] == code and d["origin"] == "trace"]


def test_graph_breaks_and_recompiles_at_the_programs_lines(tmp_path, capsys):
    src = programs.BREAKS
    status, report, summary = observe(tmp_path, src, capsys=capsys)
    assert status == 1
    breaks = {d["line"]: d for d in found(report, "TL401")}
    assert set(breaks) == {marker(src, "BRANCH"), marker(src, "PRINT")}
    branch = breaks[marker(src, "BRANCH")]
    assert "data-dependent branch" in branch["message"].splitlines()[0]
    assert "TL302 predicted this at this line" in branch["message"]
    printed = breaks[marker(src, "PRINT")]  # inside the helper the compiled function calls: the helper's line
    assert "`print`" in printed["message"] or "builtin" in printed["message"]
    assert "TL204 predicted this" in printed["message"]
    # an int attribute of a module is static: each new value recompiles forward; past the recompile limit (3)
    # forward ran eagerly, so 3 calls reached the compiled branch
    assert branch["calls"] == 3
    (recompile,) = found(report, "TL402")
    assert recompile["line"] == marker(src, "K")
    assert "`self.k` was 2 when compiled" in recompile["message"].splitlines()[0]
    # the program writes `self.k` from the script between calls: TL205 (module state a script changes) predicts it
    assert "recompile limit" in recompile["message"] and "TL205 predicted this at this line" in recompile["message"]
    assert recompile["calls"] == 2  # 0/0 -> 0/1 -> 0/2, then the limit
    assert "2 of 2 observed graph-break sites predicted; 1 of 1 observed recompile site predicted (recall)" in summary


def test_verify_names_the_line_of_the_op_a_custom_backend_changed(tmp_path, capsys):
    src = programs.CUSTOM_BACKEND
    status, report, summary = observe(tmp_path, src, "--verify", capsys=capsys)
    assert status == 1
    (d,) = found(report, "TL403")
    assert d["line"] == marker(src, "TANH") and d["severity"] == "error"
    assert "`torch.tanh`" in d["message"] and "in 4 of 4 calls" in d["message"]
    assert "4 compiled graph calls compared with eager, 4 differed (0 with the backend's own random draws given to " \
        "eager); 0 not verified" in summary


def test_without_verify_the_changed_op_is_not_reported(tmp_path):
    status, report, _ = observe(tmp_path, programs.CUSTOM_BACKEND)
    assert status == 0 and not found(report, "TL403")


def test_correct_programs_under_inductor_give_no_tl403(tmp_path, capsys):
    # buffers written in place (BatchNorm, an in-place update of an input), dropout, backward and an optimizer
    status, report, summary = observe(tmp_path, programs.CORRECT, "--verify", capsys=capsys)
    assert not found(report, "TL403"), report
    line = next(x for x in summary.splitlines() if "--verify:" in x)
    compared = int(line.split("--verify: ")[1].split()[0])
    assert compared == 7 and ", 0 differed" in line and "; 0 not verified" in line
    # dropout under inductor draws its own random numbers: the eager run of the 3 training calls took them
    assert "(3 with the backend's own random draws given to eager)" in line


def test_the_programs_backend_options_are_untouched(tmp_path, capsys):
    status, report, summary = observe(tmp_path, programs.OPTIONS, capsys=capsys)
    assert status == 0, summary  # the program asserts that its backend got its options, as without thunder-lint
    assert "1 graph compiled, 1 graph call" in summary
    import subprocess
    import sys

    plain = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0 and plain.stdout == "options 42\n", plain.stderr


def test_verify_needs_observe(tmp_path):
    from analyzer.cli import main

    (tmp_path / "prog.py").write_text("print(1)\n")
    assert main(["run", "--verify", str(tmp_path / "prog.py")]) == 2


def test_observed_findings_go_through_the_server_trace_input(tmp_path):
    from fastapi.testclient import TestClient

    from server.app import create_app

    src = programs.BREAKS
    _, report, _ = observe(tmp_path, src, "--no-with-static")
    trace = [d for d in report if d["origin"] == "trace"]
    assert {d["code"] for d in trace} == {"TL401", "TL402"}
    with TestClient(create_app()) as client:
        r = client.post("/analyze", json={"files": [{"path": "prog.py", "content": src}], "trace": trace})
    assert r.status_code == 200, r.text
    got = {(d["code"], d["line"], d["origin"]) for d in r.json()["diagnostics"]}
    assert ("TL401", marker(src, "BRANCH"), "trace") in got and ("TL302", marker(src, "BRANCH"), "static") in got


def test_the_run_demo_gives_no_false_tl403(tmp_path, capsys):
    # docs/run_demo.py writes in place through `reshape` of an input (TL101) under inductor: eager and compiled
    # agree, so --verify must stay quiet; its data-dependent `if` is a graph break TL302 predicted
    src = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "run_demo.py")).read()
    status, report, summary = observe(tmp_path, src, "--verify", capsys=capsys)
    assert not found(report, "TL403"), report
    breaks = found(report, "TL401")
    assert [d["line"] for d in breaks] == [15] and "TL302 predicted this" in breaks[0]["message"]
    line = next(x for x in summary.splitlines() if "--verify:" in x)
    assert ", 0 differed" in line and "; 0 not verified" in line


def test_observe_runs_a_module_with_dash_m(tmp_path, capsys):
    import torch._dynamo

    from analyzer.cli import main

    pkg = tmp_path / "demo_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(
        "import sys\nimport torch\n\n\n@torch.compile(backend='eager')\ndef f(x):\n    print('in f')\n"
        "    return x + 1\n\n\nf(torch.ones(2))\nprint('args', sys.argv[1:])\n")
    here = os.getcwd()
    os.chdir(tmp_path)
    torch._dynamo.reset()
    try:
        status = main(["run", "--observe", "--format", "concise", "-m", "demo_pkg", "a", "b"])
    finally:
        os.chdir(here)
        torch._dynamo.reset()
    out = capsys.readouterr()
    assert status == 1 and "args ['a', 'b']" in out.out
    assert "demo_pkg/__main__.py:7:5: TL401 " in out.err and "TL204 predicted this" not in out.err  # concise: headline
    assert "1 of 1 observed graph-break site predicted" in out.err


def test_random_draws_that_cannot_be_given_to_eager_are_not_verified_never_differing(tmp_path, capsys):
    status, report, summary = observe(tmp_path, programs.OWN_RANDOM_NO_PROBE, "--verify", capsys=capsys)
    assert not found(report, "TL403"), report
    line = next(x for x in summary.splitlines() if "--verify:" in x)
    assert "0 compiled graph calls compared with eager" in line and "3 not verified" in line
    assert "its random ops are drawn by the backend and the per-op probe failed (AssertionError)" in line


def test_a_break_inside_a_loop_is_reported_where_dynamo_gave_up_on_the_frame(tmp_path, capsys):
    src = programs.LOOP
    status, report, summary = observe(tmp_path, src, capsys=capsys)
    (d,) = found(report, "TL401")
    assert d["line"] == marker(src, "LOOP_BRANCH")
    assert d["message"].startswith("torch.compile gave up on `f` here (data-dependent branch")
    assert "runs uncompiled on every call" in d["message"] and "TL302 predicted this" in d["message"]
    assert "1 of 1 static finding in traced code happened, 0 did not" in summary
