"""The exercise pipeline: regeneration is a no-op, no solution leaks, nbval-lax grades, the
grade command's table agrees with nbval."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from conftest import isolated_pytest

from schedatrix.classroom.grader.sandbox import package_dir as s_package_dir
from schedatrix.classroom.releases.release import (
    BEGIN,
    END,
    add_release_parser,
    make_exercises,
    release_notebook,
    render,
    solution_lines,
    stub_source,
    write_release,
)
from schedatrix.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
NAMES = ["01_score", "02_run_set", "03_eviction", "04_famous_months", "05_month", "06_ideal",
         "07_eviction_odds", "08_kv_capacity", "09_decode_step", "10_request_log",
         "11_recovery", "12_router", "13_queueing", "14_sizing"]


def _nbval_lax(*paths: Path, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``pytest --nbval-lax`` on notebooks, isolated from this repo's pytest settings."""
    return isolated_pytest(cwd, "--nbval-lax", *paths)


def _fill(src: Path, dst: Path, bodies: list[str]) -> None:
    """Replace each stub of an exercise, in order, with a learner's code."""
    nb = nbformat.read(src, as_version=4)
    queue = list(bodies)
    for cell in nb.cells:
        if cell.cell_type != "code" or "raise NotImplementedError" not in cell.source:
            continue
        out = []
        for line in cell.source.split("\n"):
            if line.strip() == "# Your code here.":
                continue
            if line.strip().startswith("raise NotImplementedError"):
                indent = line[: len(line) - len(line.lstrip())]
                out += [indent + b for b in queue.pop(0).split("\n")]
            else:
                out.append(line)
        cell.source = "\n".join(out)
    assert not queue, "more bodies than stubs"
    dst.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dst)


RIGHT_SCORE = "return true_tok_s * SECONDS_PER_MONTH / rent_per_month / 1_000_000"
WRONG_SCORE = "return true_tok_s * SECONDS_PER_MONTH / rent_per_month"


# ----------------------------------------------------------------------------- the pipeline


def test_every_solution_has_an_exercise_and_a_check_cell():
    assert sorted(p.stem for p in SOLUTIONS.glob("*.ipynb")) == NAMES
    assert sorted(p.stem for p in EXERCISES.glob("*.ipynb")) == NAMES
    for name in NAMES:
        nb = nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4)
        checks = [c for c in nb.cells if "nbval-check-output" in c.metadata.get("tags", [])]
        assert checks and all("schedatrix.classroom.grading import check_" in c.source
                              for c in checks)
        assert any(BEGIN in c.source for c in nb.cells)


def test_regenerating_changes_nothing(tmp_path):
    assert make_exercises(SOLUTIONS, EXERCISES, check=True) == []
    out = tmp_path / "exercises"
    make_exercises(SOLUTIONS, out)
    for name in NAMES:
        assert (out / f"{name}.ipynb").read_bytes() == (EXERCISES / f"{name}.ipynb").read_bytes()


def test_no_solution_text_reaches_the_exercises():
    exercise_lines = set()
    exercise_text = ""
    for path in EXERCISES.glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            exercise_lines.update(line.strip() for line in cell.source.split("\n"))
            exercise_text += cell.source + "\n"
    leaked = []
    count = 0
    for path in SOLUTIONS.glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            for line in solution_lines(cell.source):
                count += 1
                if line in exercise_lines or (len(line) >= 20 and line in exercise_text):
                    leaked.append(line)
    assert count > 20  # the solutions do hold answers
    assert leaked == []
    assert "BEGIN SOLUTION" not in exercise_text and "END SOLUTION" not in exercise_text


def test_exercises_have_no_outputs_and_plain_metadata():
    for path in EXERCISES.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        assert set(nb.metadata) == {"kernelspec", "language_info", "schedatrix"}
        assert nb.metadata["schedatrix"] == {"exercise": path.stem}
        for cell in nb.cells:
            if "nbval-check-output" in cell.metadata.get("tags", []):
                assert cell.metadata == {"tags": ["nbval-check-output"], "editable": False,
                                         "deletable": False}
            else:
                assert set(cell.metadata) <= {"tags"}
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None


def test_make_exercises_refuses_a_solution_off_the_registry(tmp_path):
    nb = nbformat.read(SOLUTIONS / "01_score.ipynb", as_version=4)
    (tmp_path / "sol").mkdir()
    nbformat.write(nb, tmp_path / "sol" / "99_bonus.ipynb")
    with pytest.raises(InputError, match="not a registered exercise"):
        make_exercises(tmp_path / "sol", tmp_path / "ex")
    (tmp_path / "sol" / "99_bonus.ipynb").unlink()
    for cell in nb.cells:
        cell.source = cell.source.replace("check_score(score_card)", "check_score(print)")
    nbformat.write(nb, tmp_path / "sol" / "01_score.ipynb")
    with pytest.raises(InputError, match="check cell changed or removed"):
        make_exercises(tmp_path / "sol", tmp_path / "ex")


def test_the_release_holds_exercises_and_lessons_but_no_solutions(tmp_path):
    files = write_release(tmp_path / "class", SOLUTIONS, ROOT / "notebooks")
    names = {p.relative_to(tmp_path / "class").as_posix() for p in files}
    assert {f"exercises/{n}.ipynb" for n in NAMES} <= names
    assert "notebooks/00_walkthrough.ipynb" in names and "README.md" in names
    assert not any(n.startswith("solutions") for n in names)
    released = "".join(p.read_text() for p in files if not p.name.endswith(".gz"))
    assert BEGIN not in released and "tokens_in_a_month = true_tok_s" not in released
    for name in NAMES:
        assert (tmp_path / "class" / "exercises" / f"{name}.ipynb").read_bytes() == \
            (EXERCISES / f"{name}.ipynb").read_bytes()
    with pytest.raises(InputError, match="new or empty folder"):
        write_release(tmp_path / "class", SOLUTIONS, ROOT / "notebooks")


def test_stub_keeps_indentation_and_uses_the_hint():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    ### HINT: double it\n    return 2 * x\n" \
             "    ### END SOLUTION\n"
    stub = stub_source(source)
    assert '    raise NotImplementedError("double it")' in stub
    assert "return 2 * x" not in stub and "HINT" not in stub
    namespace = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError, match="double it"):
        namespace["f"](1)


def test_unbalanced_markers_are_bad_input():
    with pytest.raises(InputError, match="never closed"):
        stub_source(f"{BEGIN}\nx = 1\n", "nb.ipynb, cell 3")
    with pytest.raises(InputError, match="without"):
        stub_source(f"x = 1\n{END}\n")


def test_solution_tagged_cells_are_dropped():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("print('answer')", metadata={"tags": ["solution"]}),
        nbformat.v4.new_code_cell("x = 1"),
    ])
    out = release_notebook(nb)
    assert [c.source for c in out.cells] == ["x = 1"]
    assert render(out).endswith("}\n")


def test_make_exercises_command_check_mode(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_release_parser(parser.add_subparsers())
    out = tmp_path / "ex"
    args = parser.parse_args(["make-exercises", "--solutions", str(SOLUTIONS),
                              "--exercises", str(out), "--check"])
    assert args.func(args) == 1  # nothing generated yet
    assert "out of date" in capsys.readouterr().out
    args = parser.parse_args(["make-exercises", "--solutions", str(SOLUTIONS),
                              "--exercises", str(out)])
    assert args.func(args) == 0
    args.check = True
    assert args.func(args) == 0
    # a hand edit to a generated exercise is caught
    target = out / "01_score.ipynb"
    target.write_text(target.read_text().replace("score of one card", "score of a card"))
    assert args.func(args) == 1
    with pytest.raises(InputError, match="--solutions"):
        make_exercises(tmp_path / "missing", out)


# ----------------------------------------------------------------------------- nbval grading


#: The class's students whose 01_score `pytest --nbval-lax` runs beside the untouched exercises
#: (Bob's notebook is the untouched 01_score itself, byte for byte: its run stands for his).
LAX_STUDENTS = ["alice", "carol", "erin", "dave", "replaces_check", "custom_exc",
                "showtraceback", "tag_raises", "tag_skip", "calls_library"]


@pytest.fixture(scope="module")
def lax(graded):
    """One `pytest --nbval-lax` session (with the package's plugin, each notebook in a kernel
    of its own) over every untouched exercise and the LAX_STUDENTS' 01_score: its stdout."""
    _, paths = graded
    untouched = paths["tmp"] / "untouched"
    untouched.mkdir()
    for name in NAMES:
        shutil.copy(EXERCISES / f"{name}.ipynb", untouched / f"{name}.ipynb")
    subs = paths["alice"].parents[1]
    return _nbval_lax(*(untouched / f"{name}.ipynb" for name in NAMES),
                      *(subs / s / "01_score.ipynb" for s in LAX_STUDENTS),
                      cwd=paths["tmp"]).stdout


@pytest.mark.slow
def test_every_exercise_fails_untouched(lax):
    for name in NAMES:  # every notebook fails, not just one of them
        assert f"FAILED untouched/{name}.ipynb::Cell" in lax, lax[-3000:]


def test_every_solution_passes_its_checks_under_the_suites_nbval():
    """That each solution passes under the package's plugin is proved by the suite's own nbval
    of solutions/ (dev.py test, twice), where the plugin grades every check cell and nbval
    compares every output with the stored one. (This test ran them a third time, outputs
    cleared, under --nbval-lax: three minutes of CI on 2 cores for no new check.) Here: that
    the suite does run them so, and that what nbval compares against is a pass."""
    from conftest import dev_module

    dev = dev_module()
    assert {"solutions", "--nbval"} <= set(dev.TEST_ARGS)
    assert "tests.nbval_twice" in dev.TEST_ARGS     # and each a second time (test_nbval_twice)
    for name in NAMES:
        nb = nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4)
        checks = [c for c in nb.cells if "nbval-check-output" in c.metadata.get("tags", [])]
        assert checks, name
        for cell in checks:
            text = "".join(o.get("text", "") for o in cell.outputs
                           if o.get("output_type") == "stream")
            assert "Well done!" in text, (name, text)



@pytest.mark.parametrize("name", NAMES)
def test_the_graders_evaluation_passes_each_solution_and_fails_each_stub(name, sandbox):
    """Without the library's answers, the solutions' own functions still pass every check,
    and the untouched exercise fails on its stub, in the words the student sees."""
    from schedatrix.classroom.checking.exercises import EXERCISES as REGISTRY
    from schedatrix.classroom.grader.evaluation import evaluate
    from schedatrix.classroom.grader.sandbox import Limits

    exercise, limits = REGISTRY[name], Limits(notebook_timeout_s=240)
    solved = evaluate(nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4), exercise,
                      sandbox, limits)
    assert solved.passed, solved.failure
    assert [s.check for s in solved.sessions] == [c.name for c in exercise.checks]
    assert all(s.message.endswith("Well done!") for s in solved.sessions)
    stub = evaluate(nbformat.read(EXERCISES / f"{name}.ipynb", as_version=4), exercise,
                    sandbox, limits)
    assert not stub.passed
    assert stub.failure.startswith(f"{exercise.checks[0].name}: NotImplementedError: "), \
        stub.failure


# ----------------------------------------------------------------------------- grade a class
#
# One class, graded once (two at a time, as an instructor would): honest students, and every
# way to cheat that once worked (issue 9). Each cheat must fail, while a right answer still
# passes and a wrong one still fails with its helpful message.

SUCCESS = ("check_score: all 37 cases pass (7 spec figures and fixed cards, 30 random). "
           "Well done!\n")
CELL_TIMEOUT_S = 8
#: What the class's notebooks may hold, all their processes together (an honest one peaks at
#: about 200 MB: the nbval run's pytest and kernel).
MEMORY_MB = 768


def _edit(path: Path, *, before_check: list[str] = (), check_tags=None, check_output=None,
          drop_check: bool = False, kernel: str | None = None, check: str = "") -> None:
    """Change a filled-in exercise the way a learner (or a cheat) would (at its first check
    cell, or at the one that calls ``check``)."""
    nb = nbformat.read(path, as_version=4)
    at = next(i for i, c in enumerate(nb.cells)
              if "nbval-check-output" in c.metadata.get("tags", []) and f"{check}(" in c.source)
    check = nb.cells[at]
    if check_tags is not None:
        check.metadata["tags"] = check_tags
    if check_output is not None:
        check.outputs = [nbformat.v4.new_output("stream", name="stdout", text=check_output)]
        check.execution_count = 3
    for source in reversed(before_check):
        nb.cells.insert(at, nbformat.v4.new_code_cell(source))
    if drop_check:
        nb.cells.remove(check)
    if kernel:
        nb.metadata["kernelspec"]["name"] = kernel
    nbformat.write(nb, path)


def _answer_tables() -> dict[str, str]:
    """Issue 34, item 1: what a student records at home with the library, for every case a
    check shows (the fixed ones and the ones seeded by the public constant), as the body of a
    function that looks the answer up and has no code of its own (an unknown input raises
    KeyError: no guess at the drawn cases can be the lucky one)."""
    from test_grading_exercises import solution

    import schedatrix as sx
    from schedatrix.classroom.checking import checks as c
    from schedatrix.classroom.checking import checks_month as cm
    from schedatrix.classroom.checking import checks_serving as cs
    from schedatrix.fleet.odds import check_odds
    from schedatrix.fleet.plan import Plan

    fixed, rand = c._score_cases()
    score = {(rate, rent): float(sx.score(rate, rent)) for rate, rent, _ in fixed + rand}
    odds = {(cls, cards, hours, share): check_odds(
        Plan(cards=cards, card_class=cls, window=hours, evict_share=share),
        months=cm.ODDS_MONTHS, seed=7, progress=False).fail_share["evictions"]
        for cls, cards, hours, share in cm.ODDS_CASES}
    logs = {(len(events), ttft, tpot): {k: float(v) for k, v in want.items()}
            for events, ttft, tpot, want, _ in cs._log_cases()}
    right = solution("12_router")["choose"]
    routes = {}

    def record(request, replicas):
        routes[(request["time_s"], request["session"])] = picked = right(request, replicas)
        return picked

    cs.router_run(record)
    return {
        "01_score": f"TABLE = {score!r}\nreturn TABLE[(true_tok_s, rent_per_month)]",
        "07_eviction_odds": (
            "TABLE = " + repr(odds) + "\n"
            "def eviction_fail_chance(card, cards, hours, evict_share, months, seed):\n"
            "    return TABLE[(card['name'], cards, hours, evict_share)]"),
        "10_request_log": (f"TABLE = {logs!r}\n"
                           "return TABLE[(len(events), ttft_slo_s, tpot_slo_s)]"),
        "12_router": (f"TABLE = {routes!r}\n"
                      "return TABLE[(request['time_s'], request['session'])]"),
    }


def _solved(name: str, dst: Path) -> None:
    """The solution notebook as it ships, outputs and all: what a copying student hands in."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(SOLUTIONS / f"{name}.ipynb", dst)


@pytest.fixture(scope="module")
def sandbox():
    """The sandbox `auto` picks here; where there is none, `none`, asked for by name (the
    tests that need a sandbox skip, saying so)."""
    from schedatrix.classroom.grader.sandbox import choose

    try:
        return choose("auto")
    except InputError:
        return choose("none")


@pytest.fixture(scope="module")
def graded(tmp_path_factory, sandbox):
    """Build the class, grade it, and return (grades by student, the paths involved)."""
    from schedatrix.classroom.grader.grade_folder import grade_folder
    from schedatrix.classroom.grader.sandbox import Limits

    tmp = tmp_path_factory.mktemp("class")
    subs = tmp / "submissions"
    ex1 = EXERCISES / "01_score.ipynb"
    paths = {"decoy_exercises": tmp / "instructor" / "exercises",
             "canary": tmp / "instructor" / "canary.txt",
             "solutions": SOLUTIONS}
    paths["decoy_exercises"].mkdir(parents=True)
    shutil.copy(ex1, paths["decoy_exercises"] / "01_score.ipynb")

    def student(name: str, bodies=(RIGHT_SCORE,), exercise="01_score", **edits) -> Path:
        path = subs / name / f"{exercise}.ipynb"
        _fill(EXERCISES / f"{exercise}.ipynb", path, list(bodies))
        if edits:
            _edit(path, **edits)
        return path

    # honest students
    paths["alice"] = student("alice")
    (subs / "bob").mkdir(parents=True)
    shutil.copy(ex1, subs / "bob" / "01_score.ipynb")  # untouched
    student("carol", [WRONG_SCORE])
    student("dave", drop_check=True)  # right code, check cell deleted
    student("erin", [WRONG_SCORE], check_output=SUCCESS)  # the success line pasted in
    student("frank", exercise="04_famous_months", bodies=[
        'if "0" not in month.signature:\n    return None, None\n'
        'failing = ("capacity", "convergence", "evictions")[month.signature.index("0")]\n'
        'return failing, {"capacity": "cards", "convergence": "shape",'
        ' "evictions": "window"}[failing]',
        'failing, _ = diagnose(simulate(plan))\n'
        'if failing == "capacity":\n    return plan.with_knobs(card_class="flagship")\n'
        'if failing == "convergence":\n    return plan.with_knobs(shape="steady")\n'
        'return plan.with_knobs(window="day", evict_share=0.10)'])

    # the cheats: each with a wrong score_card, so only the cheat could make it pass
    wrong = [WRONG_SCORE]
    student("replaces_check", wrong, check_output=SUCCESS, before_check=[
        "import schedatrix.classroom.grading as g\n"
        f"g.check_score = lambda f: print({SUCCESS.strip()!r})"])
    student("replaces_reference", wrong, before_check=[
        "import schedatrix, schedatrix.fleet.score, schedatrix.classroom.checking.checks as c\n"
        "c._score = schedatrix.fleet.score.score = schedatrix.score = score_card"])
    student("replaces_math", wrong, before_check=[
        "import types, schedatrix.classroom.checking.checks as c\n"
        "c.math = types.SimpleNamespace(isclose=lambda *a, **k: True)"])
    student("custom_exc", wrong, before_check=[
        "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)"])
    student("showtraceback", wrong, before_check=[
        "ip = get_ipython()\n"
        "ip.showtraceback = ip._showtraceback = lambda *a, **k: None"])
    student("transformer", wrong, check_output=SUCCESS, before_check=[
        "def forge(lines):\n"
        "    if any('check_score(' in line for line in lines):\n"
        f"        return ['print({SUCCESS.strip()!r})\\n']\n"
        "    return lines\n"
        "get_ipython().input_transformers_post.append(forge)"])
    student("tag_raises", wrong, check_tags=["nbval-check-output", "raises-exception"])
    student("tag_skip", wrong, check_tags=["nbval-check-output", "nbval-skip"])
    # unsandboxed (--sandbox none, where no sandbox runs), this one would write its forgery
    # into every file the suite's processes hold open (fonts, kernels' databases) and kill its
    # parent, a pytest worker: it is graded only where a sandbox holds it
    if sandbox.kind != "none":
        student("forges_report", wrong, before_check=[
            "import os, signal, json\n"
            "fake = json.dumps({'exit': 0, 'ran': 3, 'failures': []})\n"
            "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
            "    try:\n"
            "        args = open(f'/proc/{pid}/cmdline').read().split('\\0')\n"
            "    except OSError:\n"
            "        continue\n"
            "    for arg in args:\n"
            "        if arg.startswith('--junitxml='):\n"
            "            open(arg.split('=', 1)[1], 'w').write('<testsuite/>')\n"
            "    fds = f'/proc/{pid}/fd'\n"
            "    for fd in os.listdir(fds) if os.access(fds, 4) else []:\n"
            "        try:\n"
            "            with open(f'/proc/{pid}/fd/{fd}', 'w') as out:\n"
            "                out.write(fake)\n"
            "        except OSError:\n"
            "            pass\n"
            "os.kill(os.getppid(), signal.SIGKILL)"])
    student("plan_subclass", exercise="04_famous_months", bodies=[
        'if "0" not in month.signature:\n    return None, None\n'
        'failing = ("capacity", "convergence", "evictions")[month.signature.index("0")]\n'
        'return failing, {"capacity": "cards", "convergence": "shape",'
        ' "evictions": "window"}[failing]',
        'import dataclasses\n'
        'from schedatrix import Plan\n'
        'class Quiet(Plan):\n'
        '    def to_dict(self):\n'
        '        return {**dataclasses.asdict(self), "seed": plan.seed,'
        ' "demand_tok_s": plan.demand_tok_s}\n'
        'knobs = {**dataclasses.asdict(plan), "seed": 20, "demand_tok_s": 1000.0}\n'
        'return Quiet(**knobs)'])
    decoy = paths["decoy_exercises"]
    student("rewrites_templates", wrong, before_check=[
        "import glob, os\n"
        f"targets = [{str(decoy / '01_score.ipynb')!r}]\n"
        "targets += glob.glob(os.path.join(os.getcwd(), '..', '*', 'exercises', '*.ipynb'))\n"
        "for target in targets:\n"
        "    try:\n"
        "        open(target, 'w').write('{}')\n"
        "    except OSError:\n"
        "        pass"])
    student("after_rewrite", drop_check=True)
    student("overwrites_alice", wrong, before_check=[
        "for target, text in [\n"
        f"        ({str(paths['alice'])!r}, '{{}}'),\n"
        f"        ({str(paths['canary'])!r}, 'was here')]:\n"
        "    try:\n"
        "        open(target, 'w').write(text)\n"
        "    except OSError:\n"
        "        pass"])
    (subs / "just_pass").mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("pass")]),
                   subs / "just_pass" / "01_score.ipynb")
    _solved("01_score", subs / "bonus" / "99_bonus.ipynb")
    student("calls_library", ["import schedatrix\nreturn schedatrix.score(true_tok_s, "
                              "rent_per_month)"])
    _solved("01_score", subs / "copies_solution" / "01_score.ipynb")
    (subs / "corrupt").mkdir()
    (subs / "corrupt" / "01_score.ipynb").write_text('{"cells": [')
    student("julia", kernel="julia-1.9")

    # issue 18: what got through the first sandbox, each with a wrong answer or none
    student("forges_session", wrong, check_output=SUCCESS, before_check=[
        "import schedatrix\n"
        "from schedatrix.classroom.checking import boundary\n"
        "from schedatrix.classroom import grading\n"
        "with boundary.connect() as channel:  # its own session, answered by the library\n"
        "    boundary.serve_check(channel, 'check_score', {'score_card': schedatrix.score})\n"
        f"grading.run_check = lambda name, **functions: print({SUCCESS.strip()!r})"])
    student("switches_off_refusal", [
        "import schedatrix as sx\n"
        "return getattr(sx, 'sc' + 'ore')(true_tok_s, rent_per_month)"], before_check=[
        "import contextlib\n"
        "from schedatrix.classroom.checking import boundary\n"
        "boundary.refused_answers = lambda answers: contextlib.nullcontext([])"])
    score_py = Path(s_package_dir()) / "fleet" / "score.py"
    student("execs_library_source", [
        f"source = open({str(score_py)!r}).read()\n"
        "namespace = {'__name__': 'schedatrix.fleet.score_again',"
        " '__package__': 'schedatrix.fleet'}\n"
        "exec(compile(source, 'score_again', 'exec'), namespace)\n"
        "return namespace['score'](true_tok_s, rent_per_month)"])
    student("returns_months", exercise="04_famous_months", bodies=[
        "return [month] * 1000",
        "return plan"])
    student("sleeps_in_check", ["import time\ntime.sleep(10 ** 6)"])
    (subs / "fifo").mkdir()
    os.mkfifo(subs / "fifo" / "01_score.ipynb")
    student("zz_evil\n\x1b[2Jalice  01_score  pass", [
        "raise ValueError('no\\nalice  01_score  pass\\x1b[0m')"])

    # limits
    student("loops", before_check=["while True:\n    pass"])
    student("eats_memory", before_check=["hog = bytearray(4 * 1024 ** 3)"])
    student("forks", before_check=[
        "import os, time\nn = 0\ntry:\n    while n < 5000:\n        if os.fork() == 0:\n"
        "            time.sleep(60)\n            os._exit(0)\n        n += 1\n"
        "except OSError as exc:\n    raise RuntimeError(f'stopped after {n} processes')"])
    # a right answer that also looks around: it fails if it can reach anything it must not
    student("looks_around", before_check=[
        "import os, socket\n"
        "seen = []\n"
        f"for path in [{str(paths['alice'])!r}, {str(SOLUTIONS / '01_score.ipynb')!r}]:\n"
        "    try:\n"
        "        open(path).read(1)\n"
        "        seen.append(f'read {path}')\n"
        "    except OSError:\n"
        "        pass\n"
        "try:\n"
        f"    open({str(tmp / 'written_by_a_student')!r}, 'w').write('x')\n"
        "    seen.append('wrote outside')\n"
        "except OSError:\n"
        "    pass\n"
        "try:\n"
        "    socket.create_connection(('1.1.1.1', 53), timeout=3).close()\n"
        "    seen.append('network')\n"
        "except OSError:\n"
        "    pass\n"
        "cmdlines = []\n"
        "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
        "    try:\n"
        "        cmdlines.append(open(f'/proc/{pid}/cmdline').read())\n"
        "    except OSError:\n"
        "        pass\n"
        "if any('schedatrix grade' in c or 'pytest tests' in c for c in cmdlines):\n"
        "    seen.append('host processes')\n"
        "if os.getuid() == 0:\n"
        "    seen.append('root')\n"
        "if seen:\n"
        "    raise RuntimeError('reached: ' + ', '.join(seen))"])

    # issue 34: answer tables recorded with the library (item 1), beside the honest solutions
    # of the same exercises, which pass on every grading run's drawn cases
    tables = _answer_tables()
    student("table_01", [tables["01_score"]])
    _solved("07_eviction_odds", subs / "table_07" / "07_eviction_odds.ipynb")
    _edit(subs / "table_07" / "07_eviction_odds.ipynb", before_check=[tables["07_eviction_odds"]],
          check="check_eviction_odds")
    student("table_10", [tables["10_request_log"]], exercise="10_request_log")
    student("table_12", [tables["12_router"]], exercise="12_router")
    for name in ("07_eviction_odds", "10_request_log", "12_router"):
        _solved(name, subs / "solver" / f"{name}.ipynb")
    # item 2: NaN where the grader's copy is detected (a module only that copy has), the
    # library's numbers in the notebook's own run
    _solved("08_kv_capacity", subs / "nan_in_the_copy" / "08_kv_capacity.ipynb")
    _edit(subs / "nan_in_the_copy" / "08_kv_capacity.ipynb", before_check=[
        "_right = kv_capacity_tokens\n"
        "def kv_capacity_tokens(model, gpu, tp, usable_share, reserve_gb):\n"
        "    try:\n"
        "        import schedatrix._refused  # only the grader's answer-free copy has it\n"
        "    except ImportError:\n"
        "        return _right(model, gpu, tp, usable_share, reserve_gb)\n"
        "    return float('nan')"])
    # item 3: the library's formula under another name, and a wrapper of it
    student("library_renamed", wrong, before_check=[
        "import schedatrix.fleet.bill\nscore_card = schedatrix.fleet.bill.mtok_per_dollar"])
    student("wraps_library", wrong, before_check=[
        "import functools\nfrom schedatrix.fleet import bill\n"
        "def _wrap(f):\n    @functools.wraps(f)\n    def inner(a, b):\n        return f(a, b)\n"
        "    return inner\n"
        "score_card = _wrap(bill.mtok_per_dollar)"])

    # item 4: four forked children that hold 250 MB each, with a right answer (the class's
    # notebooks may hold MEMORY_MB together; each process's address space is 2048 MiB)
    student("forks_memory", before_check=[
        "import os, time\nkids = []\nfor _ in range(4):\n    pid = os.fork()\n"
        "    if pid == 0:\n        hog = b'x' * (250 * 1024 * 1024)\n        time.sleep(30)\n"
        "        os._exit(0)\n    kids.append(pid)\nfor pid in kids:\n    os.waitpid(pid, 0)"])

    # item 5: an answer of 3 million numbers; a cell only the evaluation ran (nbval skips
    # `## NBVAL_SKIP`) holding the right answer over a wrong one; a right answer that reads
    # every process's command line and environment for the grader's paths; a student folder
    # that is a link, and a notebook in a subfolder
    student("returns_3m", ["return [0.5] * 3_000_000"])
    student("skips_in_nbval", wrong, before_check=[
        "## NBVAL_SKIP\ndef score_card(true_tok_s, rent_per_month):\n"
        "    return true_tok_s * SECONDS_PER_MONTH / rent_per_month / 1_000_000"])
    student("reads_cmdlines", before_check=[
        "import os\nseen = []\n"
        f"marks = ['schedatrix-answer-free', 'schedatrix-evaluate', 'schedatrix-grade', "
        f"{str(subs)!r}, {str(tmp)!r}]\n"
        "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
        "    for what in ('cmdline', 'environ'):\n"
        "        try:\n"
        "            text = open(f'/proc/{pid}/{what}', 'rb').read().decode(errors='replace')\n"
        "        except OSError:\n"
        "            continue\n"
        "        seen += [f'{pid}/{what}: {m}' for m in marks if m in text]\n"
        "if seen:\n"
        "    raise RuntimeError('host paths: ' + ', '.join(seen))"])
    (subs / "linked").symlink_to(subs / "alice", target_is_directory=True)
    _fill(EXERCISES / "01_score.ipynb", subs / "nests" / "work" / "01_score.ipynb",
          [RIGHT_SCORE])

    limits = Limits(cell_timeout_s=CELL_TIMEOUT_S, notebook_timeout_s=180, memory_mb=MEMORY_MB,
                    address_space_mb=2048)
    before = {p: p.read_bytes() for p in (paths["alice"], decoy / "01_score.ipynb")}
    grades = grade_folder(subs, jobs=2, sandbox=sandbox, limits=limits, solutions=SOLUTIONS)
    if sandbox.kind == "none":
        # --sandbox none, named where no sandbox runs: a classmate's code can write what the
        # grader can (docs/grading.md), and overwrites_alice does. The test that needs a
        # sandbox skips; the tests after this one read alice's and the decoy's own files.
        for path, data in before.items():
            path.write_bytes(data)
        paths["canary"].unlink(missing_ok=True)
    paths["before"] = before
    paths["tmp"] = tmp
    return {(g.student, g.exercise): g for g in grades}, paths


def _grade(graded, student, exercise="01_score"):
    return graded[0][(student, exercise)]


def test_honest_students_get_the_grade_and_the_message_they_earned(graded):
    assert _grade(graded, "alice").passed and _grade(graded, "alice").failure == ""
    assert _grade(graded, "frank", "04_famous_months").passed
    bob = _grade(graded, "bob")
    assert not bob.passed and "NotImplementedError: tokens in a month" in bob.failure
    carol = _grade(graded, "carol")
    assert not carol.passed and "AssertionError: score_card(10000 tok/s" in carol.failure
    assert "divide by a million" in carol.failure
    assert not _grade(graded, "erin").passed  # a pasted success line changes nothing
    assert "divide by a million" in _grade(graded, "erin").failure
    dave = _grade(graded, "dave")
    assert not dave.passed and "check cell changed or removed" in dave.failure


def test_answer_tables_fail_on_the_cases_drawn_for_the_grading(graded):
    """Issue 34, item 1: a table of every published case's answer, recorded with the library,
    fails on the cases the grader draws; the solutions of the same exercises pass on them; the
    seed is in every grade and in the table's last line."""
    from schedatrix.classroom.grader.grade_folder import format_table

    for student, exercise, check in (("table_01", "01_score", "check_score"),
                                     ("table_07", "07_eviction_odds", "check_eviction_odds"),
                                     ("table_10", "10_request_log", "check_log_figures"),
                                     ("table_12", "12_router", "check_router")):
        grade = _grade(graded, student, exercise)
        assert not grade.passed and grade.failure.startswith(f"{check}: AssertionError: ")
        assert "raised KeyError" in grade.failure, (grade.seed, grade.failure)
    for exercise in ("07_eviction_odds", "10_request_log", "12_router"):
        grade = _grade(graded, "solver", exercise)
        assert grade.passed, (grade.seed, grade.failure)
    seeds = {g.seed for g in graded[0].values() if g.sandbox}
    assert len(seeds) == 1 and None not in seeds
    assert format_table(list(graded[0].values())).endswith(
        f"notebooks pass (drawn cases: seed {seeds.pop()})")


def test_nan_fails_even_where_the_copy_is_detected(graded):
    """Issue 34, item 2: NaN passed `abs(got - want) > 1`; the notebook that returns it only
    in the grader's copy fails there, whatever its own run shows."""
    grade = _grade(graded, "nan_in_the_copy", "08_kv_capacity")
    assert not grade.passed
    assert grade.failure.startswith("check_kv_capacity: AssertionError: kv_capacity_tokens(")
    assert "returned nan, not a finite number" in grade.failure, grade.failure


def test_the_librarys_function_under_another_name_fails_with_a_note(graded):
    """Issue 34, item 3: score's formula as schedatrix.fleet.bill.mtok_per_dollar, bare or
    wrapped, fails, and the note names it."""
    for student in ("library_renamed", "wraps_library"):
        grade = _grade(graded, student)
        assert not grade.passed
        assert grade.failure.startswith("check_score: AssertionError: score_card is "
                                        "schedatrix.fleet.bill.mtok_per_dollar, the library's "
                                        "own function"), grade.failure
        assert "schedatrix.fleet.bill.mtok_per_dollar handed in as score_card" in grade.note


def test_one_memory_bound_holds_a_notebooks_processes_together(graded, sandbox):
    """Issue 34, item 4: four children of 250 MB each, each under the per-process limit, are
    ended together once the run holds more than the class's bound, named as such (a cgroup
    where the machine offers one, else the watchdog: docs/grading.md)."""
    grade = _grade(graded, "forks_memory")
    assert not grade.passed
    assert grade.failure == (f"code cell 2 (counting code cells from the top): its processes "
                             f"went over {MEMORY_MB} MiB together (the memory one notebook may "
                             "hold, all its processes): ended"), grade.failure


def test_item_5_size_skip_host_paths_and_rows(graded, sandbox):
    """Issue 34, item 5: an answer over the size limit is said as a size, at once; nbval's
    `## NBVAL_SKIP` is skipped by the evaluation too; under bubblewrap no process inside
    shows the grader's paths (bwrap's options reach it by a descriptor); a student folder
    that is a link, and a notebook in a subfolder, each get a row refusing them."""
    big = _grade(graded, "returns_3m")
    assert not big.passed and "returned an answer over 4 MB as plain data" in big.failure, \
        big.failure
    skips = _grade(graded, "skips_in_nbval")
    assert not skips.passed and "divide by a million" in skips.failure, skips.failure
    linked = _grade(graded, "linked", "-")
    assert not linked.passed and linked.failure == (
        "not graded: a link, not a student's folder (hand in <student>/<exercise>.ipynb, a "
        "real folder)")
    nested = _grade(graded, "nests", "work/01_score")
    assert not nested.passed and nested.failure == (
        "not graded: a notebook in a subfolder, work/ (hand in nests/01_score.ipynb)")
    if sandbox.kind != "bubblewrap":
        pytest.skip(f"sandbox {sandbox.kind!r}: the grader's processes are visible there")
    looks = _grade(graded, "reads_cmdlines")
    assert looks.passed, looks.failure


@pytest.mark.parametrize("student, says", [
    ("replaces_check", "divide by a million"),
    ("replaces_reference", "divide by a million|the library.s own answer"),
    ("replaces_math", "divide by a million"),
    ("custom_exc", "divide by a million"),
    ("showtraceback", "divide by a million"),
    ("transformer", "never reached the grader's checker|divide by a million"),
    ("tag_raises", "has the tags"),
    ("tag_skip", "has the tags"),
    ("forges_report", "divide by a million|never reached|cell "),
    ("calls_library", "called schedatrix.score, the library's own answer"),
    ("just_pass", "check cell changed or removed"),
    ("forges_session", "divide by a million"),
    ("switches_off_refusal", "called schedatrix.score, the library's own answer"),
])
def test_each_way_to_cheat_fails(graded, sandbox, student, says):
    if student == "forges_report" and sandbox.kind == "none":
        pytest.skip("no sandbox here: a forger of other processes' files is not run unheld")
    grade = _grade(graded, student)
    assert not grade.passed
    assert re.search(says, grade.failure), grade.failure


def test_only_the_graders_own_evaluation_can_pass_a_notebook(graded):
    """Issue 18, items 1 and 2: a forged session with the right check name, the kernel's
    refusal switched off, a computed name: none reaches the answer the grader compares with."""
    forged = _grade(graded, "forges_session")
    assert not forged.passed and "divide by a million" in forged.failure
    switched = _grade(graded, "switches_off_refusal")
    assert not switched.passed
    assert "score_card(10000 tok/s" not in switched.failure  # refused, not compared
    assert "called schedatrix.score, the library's own answer" in switched.failure


def test_the_library_source_is_out_of_reach_under_bubblewrap(graded, sandbox):
    grade = _grade(graded, "execs_library_source")
    if sandbox.kind != "bubblewrap":
        pytest.skip(f"sandbox {sandbox.kind!r}: the package's files stay readable "
                    "(docs/grading.md)")
    assert not grade.passed and "the library's own answer" in grade.failure, grade.failure


def test_a_notebook_cannot_hold_the_grader(graded):
    """Issue 18, item 3: answers are read as plain data (a thousand months are not rebuilt),
    and a check that never answers ends at its cell's time."""
    months = _grade(graded, "returns_months", "04_famous_months")
    assert not months.passed and "return a pair" in months.failure, months.failure
    sleeps = _grade(graded, "sleeps_in_check")
    assert not sleeps.passed
    assert sleeps.failure == (f"code cell 2 (counting code cells from the top): timed out "
                              f"after {CELL_TIMEOUT_S} s"), sleeps.failure


def test_a_pipe_is_refused_unopened_and_a_name_cannot_forge_a_row(graded):
    """Issue 18, items 4 and 5."""
    from schedatrix.classroom.grader.grade_folder import format_table

    fifo = _grade(graded, "fifo")
    assert not fifo.passed and fifo.failure == "not a valid notebook: a named pipe, not a file"
    evil = next(g for g in graded[0].values() if g.student.startswith("zz_evil"))
    assert evil.student == "zz_evil\\n\\x1b[2Jalice  01_score  pass"
    assert "raised ValueError: no\\nalice  01_score  pass\\x1b[0m" in evil.failure
    table = format_table(list(graded[0].values()))
    assert "\x1b" not in table and "\r" not in table
    assert len(table.splitlines()) == len(graded[0]) + 3  # header, rule, rows, total


def test_a_plan_subclass_cannot_hide_a_changed_seed(graded):
    grade = _grade(graded, "plan_subclass", "04_famous_months")
    assert not grade.passed and "changed the demand_tok_s and seed" in grade.failure


def test_templates_come_from_the_package_not_from_a_folder(graded):
    assert not _grade(graded, "rewrites_templates").passed
    after = _grade(graded, "after_rewrite")
    assert not after.passed and "check cell changed or removed" in after.failure
    grade = _grade(graded, "bonus", "99_bonus")
    assert not grade.passed and grade.failure == "unknown exercise '99_bonus'"


def test_the_sandbox_keeps_each_notebook_to_itself(graded, sandbox):
    if sandbox.kind == "none":
        pytest.skip("no sandbox here: the class was graded with --sandbox none, by name")
    _, paths = graded
    for path, data in paths["before"].items():
        assert path.read_bytes() == data, f"{path} was changed by a student's code"
    assert not paths["canary"].exists()
    assert _grade(graded, "alice").passed  # the victim's right answer still passes
    assert not (paths["tmp"] / "written_by_a_student").exists()


def test_a_sandboxed_notebook_reaches_nothing_else(graded, sandbox):
    if sandbox.kind != "bubblewrap":
        pytest.skip(f"sandbox {sandbox.kind!r}: reads, network and processes are bubblewrap's "
                    "to hide (docs/grading.md)")
    grade = _grade(graded, "looks_around")
    assert grade.passed, grade.failure


def test_limits_end_loops_memory_hogs_and_fork_bombs(graded, sandbox):
    loops = _grade(graded, "loops")
    assert not loops.passed and f"timed out after {CELL_TIMEOUT_S} s" in loops.failure
    memory = _grade(graded, "eats_memory")
    assert not memory.passed and "MemoryError" in memory.failure
    forks = _grade(graded, "forks")
    assert not forks.passed
    if "went over" in forks.failure:  # 256 sleeping Pythons hold the class's MEMORY_MB too
        assert f"its processes went over {MEMORY_MB} MiB together" in forks.failure
    elif sandbox.own_uid or not sandbox.as_root:
        assert "stopped after" in forks.failure, forks.failure
        count = int(re.search(r"stopped after (\d+)", forks.failure).group(1))
        assert count < 300


def test_broken_notebooks_are_named_plainly(graded):
    corrupt = _grade(graded, "corrupt")
    assert not corrupt.passed and corrupt.failure.startswith("not a valid notebook")
    julia = _grade(graded, "julia")
    assert not julia.passed and "unknown kernel 'julia-1.9'" in julia.failure
    tmp = str(graded[1]["tmp"])   # pytest's own temporary folder, which a notebook may name
    for grade in graded[0].values():
        assert "Traceback" not in grade.failure and "NbCellError" not in grade.failure
        said = grade.failure.replace(tmp, "TMP")
        assert "pytest" not in said.lower() and "IPyNb" not in said


def test_copies_and_library_calls_are_noted(graded):
    copy = _grade(graded, "copies_solution")
    assert copy.passed and "same code as the instructor's solution" in copy.note
    assert "schedatrix.score" in _grade(graded, "calls_library").note
    assert _grade(graded, "alice").note == ""


def test_plain_nbval_and_the_grade_agree(graded, lax):
    """`pytest --nbval-lax` (with the package's plugin) fails what the grade fails: honest
    wrong answers, and the tricks played inside the kernel or on the check cell's tags."""
    _, paths = graded
    subs = paths["alice"].parents[1]
    assert (subs / "bob" / "01_score.ipynb").read_bytes() == \
        (EXERCISES / "01_score.ipynb").read_bytes()
    where = {name: f"submissions/{name}/01_score.ipynb::" for name in LAX_STUDENTS}
    where["bob"] = "untouched/01_score.ipynb::"
    for name, node in where.items():
        failed = any(line.startswith(("FAILED", "ERROR")) and node in line
                     for line in lax.splitlines())
        assert failed == (not _grade(graded, name).passed), (name, lax[-3000:])
    assert "divide by a million" in lax
    assert "never reached the checker" in lax


@pytest.mark.slow
def test_grading_on_ray_gives_the_same_grades(tmp_path, sandbox, graded, monkeypatch):
    """Alice's and Carol's notebooks graded on Ray get the rows the class's local grading gave
    them (the same bytes, limits and solutions)."""
    pytest.importorskip("ray", reason="Ray is the optional 'cluster' extra")
    # the local node's raylet waits 30 s for its agent by default: too short on a busy 2-core box
    monkeypatch.setenv("RAY_agent_register_timeout_ms", "180000")
    import ray

    from schedatrix.classroom.grader.grade_folder import grade_folder
    from schedatrix.classroom.grader.sandbox import Limits

    subs = graded[1]["alice"].parents[1]
    for name in ("alice", "carol"):
        (tmp_path / name).mkdir()
        shutil.copy(subs / name / "01_score.ipynb", tmp_path / name / "01_score.ipynb")
    limits = Limits(cell_timeout_s=CELL_TIMEOUT_S, notebook_timeout_s=180,  # as the class's
                    memory_mb=MEMORY_MB, address_space_mb=2048)
    from schedatrix.serving.sweeps import ray_start

    try:   # as the grader starts it (a slow local start tried twice), with two workers
        ray_start.start(ray, None, "a local Ray", num_cpus=2, include_dashboard=False,
                        log_to_driver=False)
    except InputError as exc:
        pytest.skip(f"Ray could not start a local cluster here: {exc}")
    try:
        on_ray = grade_folder(tmp_path, engine="ray", sandbox=sandbox.kind, limits=limits,
                              solutions=SOLUTIONS, seed=_grade(graded, "alice").seed)
    finally:
        ray.shutdown()
    assert [(g.student, g.passed) for g in on_ray] == [("alice", True), ("carol", False)]
    assert on_ray == [_grade(graded, "alice"), _grade(graded, "carol")]


def test_the_table(graded):
    from schedatrix.classroom.grader.grade_folder import format_table

    grades = sorted(graded[0].values(), key=lambda g: (g.student, g.exercise))
    lines = format_table(grades).splitlines()
    assert lines[0].split()[:4] == ["student", "exercise", "result", "first"]
    assert lines[2].startswith("after_rewrite") and "FAIL" in lines[2]
    passed = sum(g.passed for g in grades)
    assert lines[-1] == (f"{passed} of {len(grades)} notebooks pass (drawn cases: seed "
                         f"{grades[0].seed})")
    assert any(" pass " in line and "note: same code" in line for line in lines)


def test_grade_folder_bad_input(tmp_path):
    from schedatrix.classroom.grader.grade_folder import grade_folder

    with pytest.raises(InputError, match="DIR must"):
        grade_folder(tmp_path / "nope")
    (tmp_path / "alice").mkdir()
    with pytest.raises(InputError, match="found none"):
        grade_folder(tmp_path)


def test_a_linked_notebook_is_not_followed(tmp_path):
    from schedatrix.classroom.grader.submissions import read_notebook

    (tmp_path / "secret").write_text("{}")
    (tmp_path / "link.ipynb").symlink_to(tmp_path / "secret")
    assert read_notebook(tmp_path / "link.ipynb") == (b"", "not a valid notebook: a link, "
                                                           "not a file")


def test_a_pipe_or_a_device_is_refused_without_waiting(tmp_path):
    import threading

    from schedatrix.classroom.grader.submissions import read_notebook

    os.mkfifo(tmp_path / "pipe.ipynb")  # opened for reading, a pipe would wait for a writer
    (tmp_path / "folder.ipynb").mkdir()
    found = {}
    reader = threading.Thread(target=lambda: found.update(
        pipe=read_notebook(tmp_path / "pipe.ipynb"),
        folder=read_notebook(tmp_path / "folder.ipynb")), daemon=True)
    reader.start()
    reader.join(timeout=60)
    assert not reader.is_alive(), "read_notebook waited on a named pipe"
    assert found["pipe"] == (b"", "not a valid notebook: a named pipe, not a file")
    assert found["folder"] == (b"", "not a valid notebook: a folder, not a file")


def test_each_notebook_is_graded_from_what_was_handed_in(tmp_path):
    """Issue 18, item 6: under --sandbox none a saboteur can write another student's file,
    but every notebook was read before any code ran; and every row says there was no
    sandbox."""
    from schedatrix.classroom.grader.grade_folder import format_table, grade_folder
    from schedatrix.classroom.grader.sandbox import Limits

    victim = tmp_path / "b_victim" / "01_score.ipynb"
    _fill(EXERCISES / "01_score.ipynb", victim, [RIGHT_SCORE])
    saboteur = tmp_path / "a_saboteur" / "01_score.ipynb"
    _fill(EXERCISES / "01_score.ipynb", saboteur, [WRONG_SCORE])
    _edit(saboteur, before_check=[f"open({str(victim)!r}, 'w').write('{{}}')"])
    grades = grade_folder(tmp_path, jobs=1, sandbox="none",
                          limits=Limits(cell_timeout_s=CELL_TIMEOUT_S, notebook_timeout_s=180))
    assert victim.read_text() == "{}"  # no sandbox: the file was written...
    assert [(g.student, g.passed) for g in grades] == [("a_saboteur", False),
                                                         ("b_victim", True)]  # ...too late
    rows = format_table(grades).splitlines()[2:-1]
    assert len(rows) == 2 and all("[NO SANDBOX]" in row for row in rows)


def test_grade_command_parser_and_bad_input(tmp_path):
    from schedatrix.classroom.grader.grade_folder import add_grade_parser

    parser = argparse.ArgumentParser()
    add_grade_parser(parser.add_subparsers())
    args = parser.parse_args(["grade", str(tmp_path), "--exercise", "01_score", "--jobs", "0"])
    assert args.exercise == "01_score" and args.width == 0 and args.sandbox == "auto"
    with pytest.raises(InputError, match="--jobs"):
        args.func(args)
    with pytest.raises(SystemExit):
        parser.parse_args(["grade", str(tmp_path), "--cell-timeout", "0"])


def test_no_student_copy_points_at_a_file_it_does_not_have():
    # issue 35: exercise 08 named shared/spec/serving.md, which neither the repository nor a
    # release holds
    for folder in (EXERCISES, SOLUTIONS):
        for nb in folder.glob("*.ipynb"):
            assert "shared/spec" not in nb.read_text(), nb.name


# ----------------------------------------------------------------------------- issue 34, item 5


def _grader_with_a_sleeper(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """`schedatrix grade` (no sandbox: cheap) on a notebook that sleeps in a cell, its
    temporary folder private to the test; returns once its run folders exist."""
    import sys
    import time

    notebook = tmp_path / "class" / "sleeper" / "01_score.ipynb"
    _fill(EXERCISES / "01_score.ipynb", notebook, [RIGHT_SCORE])
    _edit(notebook, before_check=["import time\ntime.sleep(40)"])
    import tempfile

    # a short private folder (a socket's path must stay under 108 bytes), this checkout's
    # package whatever the environment's editable install names
    temp = Path(tempfile.mkdtemp(prefix="sx-", dir="/tmp"))
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "schedatrix", "grade",
                                str(tmp_path / "class"), "--sandbox", "none", "--timeout", "120"],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    for _ in range(600):
        names = [p.name for p in temp.iterdir()]
        if any(n.startswith(f"schedatrix-evaluate-{process.pid}-") for n in names) and \
                any(n.startswith(f"schedatrix-answer-free-{process.pid}-") for n in names):
            return process, temp
        time.sleep(0.1)
    process.kill()
    raise AssertionError(f"the grader made no run folder: {process.communicate()}")


def test_a_grader_told_to_stop_leaves_nothing_in_tmp(tmp_path):
    import signal

    process, temp = _grader_with_a_sleeper(tmp_path)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    left = list(temp.iterdir())
    shutil.rmtree(temp)
    assert process.returncode == 128 + signal.SIGTERM, (out, err)
    assert left == []


def test_a_run_started_after_the_stop_ends_as_it_starts():
    """The stop can land between a run's folders and its process (end_all then finds no
    process to end): the run that starts afterwards ends at once instead of running the whole
    notebook; a grading that begins later starts its runs again."""
    import time

    from schedatrix.classroom.grader.sandbox import Launch, allow_runs, end, end_all

    sleeper = Launch(["sleep", "30"], {"PATH": "/usr/bin:/bin"}, "/", ())
    try:
        end_all()
        started = time.monotonic()
        process = sleeper.start()
        assert process.wait(timeout=10) != 0
        assert time.monotonic() - started < 5
        end(process)
    finally:
        allow_runs()
    process = sleeper.start()
    try:
        time.sleep(0.3)
        assert process.poll() is None        # runs again once a grading begins
    finally:
        end(process)


def test_a_grader_killed_outright_is_swept_by_the_next(tmp_path):
    import signal

    from schedatrix.classroom.grader.sandbox import sweep_leftovers

    process, temp = _grader_with_a_sleeper(tmp_path)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    left = sorted(p.name for p in temp.iterdir())
    assert left and all(f"-{process.pid}-" in n for n in left)
    alive = temp / "schedatrix-grade-1-kept"   # pid 1 is alive: a running grader's folder
    alive.mkdir()
    swept = sorted(p.name for p in sweep_leftovers(str(temp)))
    kept = list(temp.iterdir())
    shutil.rmtree(temp)
    assert swept == left and kept == [alive]


def test_grade_on_ray_names_the_address_in_one_line(tmp_path, monkeypatch):
    """Without a cluster named the grader says how to name one, at once; an address where
    nothing answers is refused within seconds, before anything is printed."""
    notebook = tmp_path / "class" / "alice" / "01_score.ipynb"
    _fill(EXERCISES / "01_score.ipynb", notebook, [RIGHT_SCORE])
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    from conftest import run_in_process as cli

    done = cli("grade", str(tmp_path / "class"), "--engine", "ray")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("schedatrix: error: --engine ray needs a Ray cluster: name it with "
                           "--address HOST:6379 (or RAY_ADDRESS=HOST:6379), or --address local "
                           "to start one on this machine\n")
    done = cli("grade", str(tmp_path / "class"), "--engine", "ray", "--address", "127.0.0.1:1")
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert "--engine ray --address 127.0.0.1:1: no Ray cluster answers at 127.0.0.1:1" in \
        done.stderr
    done = cli("grade", str(tmp_path / "class"), "--address", "local")
    assert done.returncode == 2 and "use it with --engine ray" in done.stderr
