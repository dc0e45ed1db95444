"""The exercise pipeline: regeneration is a no-op, no solution leaks, nbval-lax grades, the
grade command's table agrees with nbval."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from schedatrix.classroom.grade_folder import (
    add_grade_parser,
    format_table,
    grade_folder,
    grade_notebook,
)
from schedatrix.classroom.release import (
    BEGIN,
    END,
    add_release_parser,
    make_exercises,
    release_notebook,
    render,
    solution_lines,
    stub_source,
)
from schedatrix.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
NAMES = ["01_score", "02_run_set", "03_eviction", "04_famous_months"]


def _nbval_lax(*paths: Path, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``pytest --nbval-lax`` on notebooks, isolated from this repo's pytest settings."""
    ini = cwd / "pytest.ini"
    ini.write_text("[pytest]\n")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "-q", "-p", "no:cacheprovider",
         "-c", str(ini), "--rootdir", str(cwd), *map(str, paths)],
        cwd=cwd, capture_output=True, text=True, timeout=600,
    )


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
        assert set(nb.metadata) == {"kernelspec", "language_info"}
        for cell in nb.cells:
            assert set(cell.metadata) <= {"tags"}
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None


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


def test_every_exercise_fails_untouched_and_passes_with_its_solution(tmp_path):
    untouched = [shutil.copy(EXERCISES / f"{n}.ipynb", tmp_path / f"{n}.ipynb") for n in NAMES]
    result = _nbval_lax(*map(Path, untouched), cwd=tmp_path)
    for name in NAMES:
        assert f"{name}.ipynb::Cell" in result.stdout and "FAILED" in result.stdout
    solved = tmp_path / "solved"
    solved.mkdir()
    for name in NAMES:  # the solutions, outputs cleared: what a perfect student hands in
        nb = nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        nbformat.write(nb, solved / f"{name}.ipynb")
    result = _nbval_lax(*sorted(solved.glob("*.ipynb")), cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:]


# ----------------------------------------------------------------------------- grade a folder


def _failed(result: subprocess.CompletedProcess, path: Path) -> bool:
    """Whether pytest's summary lists a failing cell of this notebook."""
    return any(line.startswith("FAILED") and f"{path.parent.name}/{path.name}::" in line
               for line in result.stdout.splitlines())


def test_nbval_lax_and_the_grade_table_agree_on_each_kind_of_student(tmp_path):
    """Untouched fails, wrong fails, right passes, a forged success output still fails; the
    grade command's table says the same as nbval, plus it catches a deleted check cell."""
    subs = tmp_path / "submissions"
    exercise = EXERCISES / "01_score.ipynb"
    _fill(exercise, subs / "alice" / "01_score.ipynb", [RIGHT_SCORE])
    (subs / "bob").mkdir(parents=True)
    shutil.copy(exercise, subs / "bob" / "01_score.ipynb")  # untouched
    _fill(exercise, subs / "carol" / "01_score.ipynb", [WRONG_SCORE])
    # erin: a wrong function, with the solution's success message pasted into the outputs
    solved = nbformat.read(SOLUTIONS / "01_score.ipynb", as_version=4)
    saved = [c for c in solved.cells if "nbval-check-output" in c.metadata.get("tags", [])][0]
    assert "Well done" in saved.outputs[0]["text"]
    forged = subs / "erin" / "01_score.ipynb"
    _fill(exercise, forged, [WRONG_SCORE])
    nb = nbformat.read(forged, as_version=4)
    for cell in nb.cells:
        if "nbval-check-output" in cell.metadata.get("tags", []):
            cell.outputs, cell.execution_count = saved.outputs, saved.execution_count
    nbformat.write(nb, forged)
    # dave passes nbval but deleted his check cell: the template rule catches it
    _fill(exercise, subs / "dave" / "01_score.ipynb", [RIGHT_SCORE])
    nb = nbformat.read(subs / "dave" / "01_score.ipynb", as_version=4)
    nb.cells = [c for c in nb.cells if "nbval-check-output" not in c.metadata.get("tags", [])]
    nbformat.write(nb, subs / "dave" / "01_score.ipynb")

    students = ["alice", "bob", "carol", "dave", "erin"]
    paths = {name: subs / name / "01_score.ipynb" for name in students}
    result = _nbval_lax(*paths.values(), cwd=tmp_path)
    nbval_failed = {name: _failed(result, path) for name, path in paths.items()}
    assert nbval_failed == {"alice": False, "bob": True, "carol": True, "dave": False,
                            "erin": True}, result.stdout[-3000:]
    assert "NotImplementedError" in result.stdout
    assert "divide by a million" in result.stdout

    grades = grade_folder(subs, exercises=EXERCISES, jobs=2)
    by_student = {g.student: g for g in grades}
    assert sorted(by_student) == students
    for name in ("alice", "bob", "carol", "erin"):
        assert by_student[name].passed == (not nbval_failed[name])
    assert by_student["alice"].failure == ""
    assert "NotImplementedError: tokens in a month" in by_student["bob"].failure
    assert "AssertionError: score_card(10000 tok/s" in by_student["carol"].failure
    assert "AssertionError" in by_student["erin"].failure
    assert not by_student["dave"].passed and "check cell" in by_student["dave"].failure
    assert grade_notebook(paths["dave"]) == (True, "")  # without the template rule

    table = format_table(grades)
    lines = table.splitlines()
    assert lines[0].split() == ["student", "exercise", "result", "first", "failing", "check"]
    assert lines[2].startswith("alice") and " pass" in lines[2]
    assert "FAIL" in lines[3] and lines[-1] == "1 of 5 notebooks pass"


def test_grade_folder_bad_input(tmp_path):
    with pytest.raises(InputError, match="DIR must"):
        grade_folder(tmp_path / "nope")
    (tmp_path / "alice").mkdir()
    with pytest.raises(InputError, match="found none"):
        grade_folder(tmp_path)


def test_grade_command_parser_and_bad_jobs(tmp_path):
    parser = argparse.ArgumentParser()
    add_grade_parser(parser.add_subparsers())
    args = parser.parse_args(["grade", str(tmp_path), "--exercise", "01_score", "--jobs", "0"])
    assert args.exercise == "01_score" and args.width == 0
    with pytest.raises(InputError, match="--jobs"):
        args.func(args)
