"""`thunder-lint run` end to end: real programs in subprocesses, their stdout and exit status compared with
plain python's (eager: TORCHDYNAMO_DISABLE=1 makes torch.compile a no-op), the findings' codes, lines, call
counts and origins read from the json / sarif / concise reports."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import run_programs as programs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=ROOT, **extra)
    env.pop("THUNDER_LINT_DEBUG", None)
    return env


def run_lint(cwd, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "analyzer.cli", "run", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=timeout)


def run_eager(cwd, *args, timeout=300):
    return subprocess.run([sys.executable, *args], cwd=cwd, env=_env(TORCHDYNAMO_DISABLE="1"),
                          capture_output=True, text=True, timeout=timeout)


def marker(source: str, tag: str) -> int:
    """The 1-based line of the `# <-TAG` comment."""
    lines = [i for i, line in enumerate(source.splitlines(), 1) if line.rstrip().endswith(f"# <-{tag}")]
    assert len(lines) == 1, tag
    return lines[0]


def by_place(diagnostics):
    return {(d["code"], d["line"], d["origin"]): d for d in diagnostics}


@pytest.mark.timeout(900)  # two processes training a model; minutes when the machine is shared
def test_training_script_findings_counts_and_unchanged_output(tmp_path):
    (tmp_path / "train.py").write_text(programs.TRAIN)
    eager = run_eager(tmp_path, "train.py", "0")
    ran = run_lint(tmp_path, "--format", "json", "--output-file", "report.json", "train.py", "0")
    assert eager.returncode == 0, eager.stderr
    assert ran.returncode == 1, ran.stderr  # findings
    assert ran.stdout == eager.stdout and ran.stdout.count("\n") == 20  # the program's 20 steps, as eager
    found = by_place(json.loads((tmp_path / "report.json").read_text()))
    tl101, tl201 = marker(programs.TRAIN, "TL101"), marker(programs.TRAIN, "TL201")
    assert found[("TL101", tl101, "trace")]["calls"] == 20  # GPT.forward, compiled with torch.compile(model)
    assert found[("TL201", tl201, "trace")]["calls"] == 20  # loss_fn reads `settings`
    assert "calls" not in found[("TL201", tl201, "static")]  # merged with the static finding on that line
    assert all(d["path"] == "train.py" for d in found.values())
    assert ran.stderr == ""  # the report went to the file; nothing printed into the program's output


def test_generation_loop_stops_at_eos_and_reports_sarif(tmp_path):
    (tmp_path / "gen.py").write_text(programs.GENERATE)
    eager = run_eager(tmp_path, "gen.py", "6")
    ran = run_lint(tmp_path, "--format", "sarif", "gen.py", "6")
    assert ran.returncode == 1 and ran.stdout == eager.stdout
    generated = json.loads(eager.stdout.split("generated ")[1])
    assert generated[-1] == 6 and 6 not in generated[:-1] and len(generated) < 12  # stopped at EOS
    sarif = json.loads(ran.stderr)  # the report is on stderr, the program's stdout is its own
    results = sarif["runs"][0]["results"]
    tl302 = [r for r in results if r["ruleId"] == "TL302" and r["properties"]["origin"] == "trace"]
    assert len(tl302) == 1
    assert tl302[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == marker(programs.GENERATE, "TL302")
    assert tl302[0]["properties"]["calls"] == len(generated)  # next_token ran once per generated token


@pytest.mark.timeout(900)
@pytest.mark.parametrize("how", ["script", "module"])
def test_every_entry_point_refusals_and_python_effects(tmp_path, how):
    (tmp_path / "small.py").write_text(programs.SMALL)
    (tmp_path / "thunder").mkdir()
    (tmp_path / "thunder" / "__init__.py").write_text(programs.FAKE_THUNDER)
    target = ["small.py"] if how == "script" else ["-m", "small"]
    ran = run_lint(tmp_path, "--format", "concise", "--no-with-static", *target, "x", "--y")
    assert ran.returncode == 1, ran.stderr
    if how == "script":
        eager = run_eager(tmp_path, "small.py", "x", "--y")
        assert eager.returncode == 0, eager.stderr
        assert ran.stdout == eager.stdout
        assert "SharpEdgeWarning" in eager.stderr  # plain python: analyzer.jit(sharp_edges="warn") warns
    assert ran.stdout.count("side effect\n") == 3 and ran.stdout.count("refused runs\n") == 3  # once per call
    assert ran.stdout.endswith("argv ['x', '--y']\n")
    assert "SharpEdgeWarning" not in ran.stderr  # collected, not warned into the program's output
    lines = [line for line in ran.stderr.splitlines() if ": TL" in line]
    got = {(line.split(":")[1], line.split()[1], line.rsplit("[", 1)[1]) for line in lines}
    expect = {
        (marker(programs.SMALL, "TL204"), "TL204", "trace, 3 calls]"),  # torch.compile(backend=...) decorator
        (marker(programs.SMALL, "TL003"), "TL003", "trace, 1 call]"),  # refused once, then eager
        (marker(programs.SMALL, "TL204-refused"), "TL204", "trace, 1 call]"),  # seen by the refused trace
        (marker(programs.SMALL, "TL201"), "TL201", "trace, 6 calls]"),  # thunder.jit and analyzer.jit of `scaled`
        (marker(programs.SMALL, "TL302"), "TL302", "trace, 3 calls]"),  # nn.Module.compile
        (marker(programs.SMALL, "TL101"), "TL101", "trace, 3 calls]"),  # compiler.jit
    }
    assert got == {(str(line), code, rest) for line, code, rest in expect}
    assert all(line.startswith("small.py:") for line in lines)  # the user's file, never thunder-lint's


def test_program_failure_exits_with_its_own_status_a_summary_and_the_findings(tmp_path):
    (tmp_path / "fail.py").write_text(programs.FAILING)
    ran = run_lint(tmp_path, "--format", "json", "-o", "out.json", "fail.py")
    assert ran.returncode == 1  # python's status for an uncaught exception; 2 is thunder-lint's usage error only
    assert ran.stdout == "step\n" * 3
    assert "Traceback (most recent call last)" in ran.stderr and "ValueError: the program's own bug" in ran.stderr
    assert "runpy" not in ran.stderr and "analyzer" not in ran.stderr  # only the program's frames
    assert "the program failed at fail.py:14 (in <module>): ValueError: the program's own bug" in ran.stderr
    found = by_place(json.loads((tmp_path / "out.json").read_text()))
    line = marker(programs.FAILING, "TL204")
    assert found[("TL204", line, "trace")]["calls"] == 3 and ("TL204", line, "static") in found


def test_max_calls_stops_the_program_and_reports(tmp_path):
    (tmp_path / "endless.py").write_text(programs.ENDLESS)
    (tmp_path / "pyproject.toml").write_text('[tool.thunder-lint]\nignore = ["TL204"]\n')
    ran = run_lint(tmp_path, "--format", "json", "-o", "a.json", "--max-calls", "5", "endless.py")
    assert ran.returncode == 0, ran.stderr  # stopped by us, not a failure; TL204 ignored by the config
    assert ran.stdout == "step\n" * 5
    assert json.loads((tmp_path / "a.json").read_text()) == [] and "--max-calls 5 reached" in ran.stderr
    ran = run_lint(tmp_path, "--format", "json", "-o", "b.json", "--max-calls", "5", "--select", "TL204", "endless.py")
    found = by_place(json.loads((tmp_path / "b.json").read_text()))
    assert ran.returncode == 1 and found[("TL204", marker(programs.ENDLESS, "TL204"), "trace")]["calls"] == 5


def test_max_seconds_stops_an_endless_program_and_reports(tmp_path):
    (tmp_path / "endless.py").write_text(programs.ENDLESS)
    ran = run_lint(tmp_path, "--format", "json", "-o", "out.json", "--no-with-static", "--max-seconds", "4",
                   "endless.py")
    assert "--max-seconds 4 reached" in ran.stderr
    steps = ran.stdout.count("step\n")
    # (print writes the text and the newline apart: the alarm may land between them)
    assert ran.stdout in ("step\n" * steps, "step\n" * steps + "step"), ran.stdout[-40:]
    found = json.loads((tmp_path / "out.json").read_text())
    # The alarm can land inside a call after its print and before the call's findings are counted, so the
    # count is the prints or one less; on a very busy machine the first trace may not finish in 4 s at all.
    calls = [d["calls"] for d in found if (d["code"], d["line"]) == ("TL204", marker(programs.ENDLESS, "TL204"))]
    assert [d["code"] for d in found] == (["TL204"] if calls else []), found
    assert not calls or steps - 1 <= calls[0] <= steps, (calls, steps)
    assert steps <= 1 or calls, (steps, found)  # a whole call completed: its finding is reported
    assert ran.returncode == (1 if calls else 0), ran.stderr


LIBRARY_REFUSED = """\
import torch

lin = torch.nn.Linear(2, 2)
flat = torch.compile(torch.nn.utils.parameters_to_vector)  # <-TL003
print(flat(lin.parameters()).shape)
"""


def test_a_refused_function_outside_the_project_is_reported_never_all_checks_passed(tmp_path):
    # torch's own function, compiled by the program and refused by the compiler (a generator argument): it ran
    # uncompiled and unchecked, so the run must say so, also when the selection leaves TL003 out
    (tmp_path / "prog.py").write_text(LIBRARY_REFUSED)
    for selection in ([], ["--select", "TL1"]):
        ran = run_lint(tmp_path, "--format", "concise", *selection, "prog.py")
        assert ran.returncode == 1 and ran.stdout == "torch.Size([6])\n", ran.stderr
        assert "All checks passed!" not in ran.stderr, ran.stderr
        (line,) = [x for x in ran.stderr.splitlines() if " TL003 " in x]
        assert line.startswith(f"prog.py:{marker(LIBRARY_REFUSED, 'TL003')}:1: TL003 the compiler refused "
                               "`parameters_to_vector` (torch/nn/utils/convert_parameters.py:"), line
        assert "outside the project): it ran uncompiled and unchecked" in line
    ran = run_lint(tmp_path, "--format", "json", "prog.py")
    (d,) = json.loads(ran.stderr)
    assert d["code"] == "TL003" and "\nwhy: UnsupportedInputError: " in d["message"]


def test_the_programs_exit_status_passes_through(tmp_path):
    (tmp_path / "exits.py").write_text("import sys\nprint('bye')\nsys.exit(3)\n")
    ran = run_lint(tmp_path, "exits.py")
    assert ran.returncode == 3 and ran.stdout == "bye\n"
    (tmp_path / "ok.py").write_text("print('fine')\n")
    assert run_lint(tmp_path, "ok.py").returncode == 0
    assert run_lint(tmp_path, "--no-such-option", "ok.py").returncode == 2  # our own usage error
