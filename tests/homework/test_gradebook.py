"""Grading a class with ``grade-all``: a folder of submissions into a CSV gradebook, feedback files, and a state
that lets a run again grade only what changed. Run as an instructor runs it: the command, in a process of its
own, as root, so each grading's student code runs as a student user behind every fence."""

from __future__ import annotations

import csv
import io
import json
import os
import pathlib
import random
import shutil
import signal
import subprocess
import time
import zipfile

import pytest

from tinyattn.homework import commands, gradebook

from .gradescope_box import require_isolation

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "course"
CHECKOUT = pathlib.Path(__file__).parents[2]
TASKS = ["layernorm_backward", "gelu_backward"]

# The GELU task answered by central differences through the op's own forward: its policy (derive) scores no
# float64 output off by more than its precision, and a central difference is (policy.imprecise)
NUMERICAL = """
        (x,) = ctx.saved_tensors[:1]
        h = 1e-6
        return (grad_output * (GELU.forward(ctx, x + h) - GELU.forward(ctx, x - h)) / (2 * h),)
"""


@pytest.fixture(scope="module")
def assignment(tmp_path_factory):
    out = tmp_path_factory.mktemp("class") / "hw"
    commands.assign(str(out), TASKS, course=commands.course_at(str(EXAMPLE)))
    return out


def _student(assignment, folder, kind):
    """A student's copy of kind ``solved``, ``blank``, ``partly`` (LayerNorm only), ``broken`` (a syntax error
    in the GELU task) or ``dishonest`` (GELU differentiated numerically)."""
    shutil.copytree(assignment / "student", folder)
    course = commands.course_at(str(EXAMPLE))
    if kind in ("solved", "broken", "dishonest"):
        commands.solve(str(folder), TASKS, course)
    elif kind == "partly":
        commands.solve(str(folder), ["layernorm_backward"], course)
    gelu = folder / "gelu.py"
    if kind == "broken":
        gelu.write_text(gelu.read_text().replace("pdf = np.exp(", "pdf = np.exp((", 1))
    if kind == "dishonest":
        lines = gelu.read_text().split("\n")
        start = next(i for i, line in enumerate(lines) if "x, cdf = ctx.saved_tensors" in line)
        lines[start:start + 3] = NUMERICAL.strip("\n").split("\n")
        gelu.write_text("\n".join(lines))
    return folder


def _zip(folder, path):
    with zipfile.ZipFile(path, "w") as z:
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                z.write(file, file.relative_to(folder))
    shutil.rmtree(folder)


EXPECTED = {"solved": (3, 2), "blank": (0, 0), "partly": (3, 0), "broken": (3, 0), "dishonest": (3, 0)}


def _grade_all(submissions, assignment, csv_path, python):
    """``grade-all`` as the instructor runs it: a command, here with the Python the student user can run."""
    done = subprocess.run([python, "-m", "tinyattn.homework", "grade-all", str(submissions), "--autograder",
                           str(assignment / "autograder"), "--csv", str(csv_path), "--timeout", "60"],
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(CHECKOUT)})
    assert done.returncode == 0, done.stdout + done.stderr
    with open(csv_path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f)), done.stdout + done.stderr


def test_a_class_of_mixed_submissions_gives_the_expected_gradebook_and_a_rerun_grades_only_what_changed(
        assignment, tmp_path):
    venv = require_isolation()
    python = os.path.join(venv, "bin", "python")
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    for kind in EXPECTED:
        _student(assignment, submissions / kind, kind)
    _zip(submissions / "partly", submissions / "partly.zip")  # a zip, as a student uploads it
    (submissions / "garbled.zip").write_bytes(b"not a zip at all")
    rows, log = _grade_all(submissions, assignment, tmp_path / "grades.csv", python)
    got = {r["student"]: (float(r["layernorm_backward"]), float(r["gelu_backward"]), r["status"]) for r in rows}
    want = {kind: (*map(float, points), "graded") for kind, points in EXPECTED.items()}
    assert {k: v for k, v in got.items() if k != "garbled"} == want, log[-3000:]
    assert got["garbled"][:2] == (0.0, 0.0) and got["garbled"][2].startswith("not graded: not a zip file")
    assert [r["total"] for r in rows if r["student"] == "solved"] == ["5"]
    assert "5/5 graded" in log or "6/6 graded" in log
    feedback = (tmp_path / "feedback" / (gradebook.file_name("dishonest") + ".md")).read_text()
    assert "does it differentiate numerically" in feedback and "gelu_backward" in feedback
    solved_log = (tmp_path / "logs" / (gradebook.file_name("solved") + ".log")).read_text()
    assert "isolation reduced" not in solved_log and "behind every fence" in solved_log, solved_log

    blank = submissions / "blank"  # the blank student hands in again, with GELU solved
    commands.solve(str(blank), ["gelu_backward"], commands.course_at(str(EXAMPLE)))
    rows, log = _grade_all(submissions, assignment, tmp_path / "grades.csv", python)
    assert "1 graded now, 5 unchanged since the last run" in log
    assert {r["student"]: r["total"] for r in rows} == {
        "solved": "5", "blank": "2", "partly": "3", "broken": "3", "dishonest": "3", "garbled": "0"}


@pytest.mark.slow  # (fifty gradings, three times over: about three minutes on two cores)
def test_fifty_submissions_five_broken_or_hostile_and_a_ctrl_c_at_a_random_moment(assignment, tmp_path):
    """Gradescope's export of fifty: nine each of solved, blank, partly solved, broken and dishonest, and five
    that cannot be graded or attack the gradebook (an encrypted zip, a Deflate64 zip, a link to /dev/zero, a FIFO,
    a forged status). Every other grade is right; after Ctrl-C at a random moment (seeded) and a run again, the
    CSV is the same as an uninterrupted run's."""
    venv = require_isolation()
    python = os.path.join(venv, "bin", "python")
    export = tmp_path / "export"
    export.mkdir()
    kinds = list(EXPECTED) * 9
    metadata = {}
    for n, kind in enumerate(kinds):
        _student(assignment, export / f"submission_{1000 + n}", kind)
        metadata[1000 + n] = ([f"student{n}@example.edu"], "2026-12-01 10:00:00.000000000 -08:00")
    zips = broken_zips()
    hostile = {1045: "encrypted", 1046: "deflate64"}
    for sub, kind in hostile.items():
        (export / f"submission_{sub}.zip").write_bytes(zips[kind][0])
    _student(assignment, export / "submission_1047", "solved")
    (export / "submission_1047" / "big.py").symlink_to("/dev/zero")
    _student(assignment, export / "submission_1048", "solved")
    os.mkfifo(export / "submission_1048" / "pipe")
    _student(assignment, export / "submission_1049", "solved")
    _prints_a_forged_status(export / "submission_1049")
    for sub in range(1045, 1050):
        metadata[sub] = ([f"student{sub - 1000}@example.edu"], "2026-12-01 10:00:00.000000000 -08:00")
    _export(export, metadata)
    rows, log = _grade_all(export, assignment, tmp_path / "grades.csv", python)
    assert len(rows) == 50
    for n, kind in enumerate(kinds):
        row = next(r for r in rows if r["student"] == f"student{n}@example.edu")
        assert (float(row["layernorm_backward"]), float(row["gelu_backward"])) == EXPECTED[kind], (n, kind, row)
        assert row["submission"] == f"submission_{1000 + n}" and row["status"] == "graded"
    by_student = {r["student"]: r for r in rows}
    for n in (45, 46):
        assert by_student[f"student{n}@example.edu"]["status"].startswith("not graded: the zip cannot be unpacked")
    for n in (47, 48, 49):
        assert (by_student[f"student{n}@example.edu"]["total"], by_student[f"student{n}@example.edu"]["status"]) \
            == ("5", "graded")
    assert len(list((tmp_path / "feedback").iterdir())) == 50
    uninterrupted = (tmp_path / "grades.csv").read_text()

    stopped = tmp_path / "stopped"
    stopped.mkdir()
    command = [python, "-m", "tinyattn.homework", "grade-all", str(export), "--autograder",
               str(assignment / "autograder"), "--csv", str(stopped / "grades.csv"), "--timeout", "60"]
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
    moment = random.Random(77).uniform(3.0, 20.0)
    # the terminal's Ctrl-C: SIGINT to grade-all's whole foreground process group
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    time.sleep(moment)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (moment, out, err)
    assert "stopped" in err and "run the same command again to finish" in err, err
    state = json.loads((stopped / "grades.csv.state.json").read_text())
    assert 0 < len(state) < 50, (moment, len(state))
    assert all(kept["status"] == "graded" or kept["status"].startswith("not graded: the zip")
               for kept in state.values()), state
    again = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{50 - len(state)} graded now, {len(state)} unchanged" in again.stdout, again.stdout
    assert (stopped / "grades.csv").read_text() == uninterrupted

    changed = export / "submission_1001"  # a blank one, now solved
    commands.solve(str(changed), TASKS, commands.course_at(str(EXAMPLE)))
    rows, log = _grade_all(export, assignment, tmp_path / "grades.csv", python)
    assert "1 graded now, 49 unchanged since the last run" in log
    assert "changed: student1@example.edu: 0 -> 5 (+5)" in log
    assert next(r for r in rows if r["student"] == "student1@example.edu")["total"] == "5"


def test_a_zip_that_reaches_outside_its_folder_or_holds_a_link_is_not_unpacked(tmp_path):
    outside = tmp_path / "out.zip"
    with zipfile.ZipFile(outside, "w") as z:
        z.writestr("../../escaped.py", "x = 1")
    link = tmp_path / "link.zip"
    with zipfile.ZipFile(link, "w") as z:
        info = zipfile.ZipInfo("gelu.py")
        info.external_attr = 0o120777 << 16
        z.writestr(info, "/etc/passwd")
    for path, message in ((outside, "a path outside its folder"), (link, "a symbolic link")):
        dest = tmp_path / path.stem
        dest.mkdir()
        with pytest.raises(gradebook.GradebookError, match=message):
            gradebook.unpack(str(path), str(dest))
        assert list(dest.iterdir()) == []
    assert not (tmp_path.parent / "escaped.py").exists()


def test_two_submissions_of_one_student_are_refused_in_one_line(tmp_path, capsys):
    from tinyattn.homework.__main__ import main

    (tmp_path / "subs" / "ann").mkdir(parents=True)
    (tmp_path / "subs" / "ann.zip").write_bytes(b"")
    (tmp_path / "hw" / "autograder").mkdir(parents=True)
    (tmp_path / "hw" / "autograder" / "manifest.json").write_text('{"tasks": {}}')
    assert main(["grade-all", str(tmp_path / "subs"), "--autograder", str(tmp_path / "hw" / "autograder"),
                 "--csv", str(tmp_path / "g.csv")]) == 2
    assert capsys.readouterr().err == "error: grade-all: more than one submission for ann\n"


def test_a_folder_of_submissions_the_student_users_can_read_is_named_on_the_last_line(assignment, tmp_path):
    """A classmate's submission must be out of the student users' reach: where the folder is readable by every
    user, each grading says so, and grade-all's last line repeats it for the instructor."""
    python = os.path.join(require_isolation(), "bin", "python")
    import tempfile

    open_folder = pathlib.Path(tempfile.mkdtemp(prefix="tinyattn-open-"))
    try:
        open_folder.chmod(0o755)
        _student(assignment, open_folder / "solved", "solved")
        rows, log = _grade_all(open_folder, assignment, tmp_path / "grades.csv", python)
        assert [r["total"] for r in rows] == ["5"]
        assert f"note: isolation reduced: the user tinyattn-student can read {open_folder}" in log, log[-2000:]
    finally:
        shutil.rmtree(open_folder)


# -- one submission harms only its own row ------------------------------------------------------------------------

def _zip_bytes(members):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in members:
            z.writestr(name, text)
    return buffer.getvalue()


def _patched(data, field, value):
    """``data`` (a zip of one member) with a field of its local and central headers changed: ``flags`` (bit 0:
    encrypted) or ``method`` (the compression: 9 is Deflate64, which Python cannot read)."""
    local, central = {"flags": 6, "method": 8}[field], {"flags": 8, "method": 10}[field]
    data = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", local), (b"PK\x01\x02", central)):
        at = data.index(signature) + offset
        data[at:at + 2] = value.to_bytes(2, "little")
    return bytes(data)


def broken_zips():
    """Zips Python's reader fails on in four ways, each named: encrypted, Deflate64, corrupt data, and a member
    under a file."""
    one = _zip_bytes([("gelu.py", "x = 1\n" * 2000)])
    corrupt = bytearray(one)
    middle = corrupt.index(b"PK\x03\x04") + 30 + len("gelu.py") + 4
    corrupt[middle:middle + 8] = b"\xff" * 8
    return {
        "encrypted": (_patched(one, "flags", 1), "encrypted"),
        "deflate64": (_patched(one, "method", 9), "compression"),
        "corrupt": (bytes(corrupt), "Error"),
        "under_a_file": (_zip_bytes([("gelu.py", "x = 1"), ("gelu.py/inner.py", "y = 2")]), "Error"),
    }


@pytest.mark.parametrize("kind", ["encrypted", "deflate64", "corrupt", "under_a_file"])
def test_a_zip_python_cannot_read_is_one_error_naming_why(tmp_path, kind):
    data, said = broken_zips()[kind]
    path = tmp_path / f"{kind}.zip"
    path.write_bytes(data)
    (tmp_path / "dest").mkdir()
    with pytest.raises(gradebook.GradebookError, match=said):
        gradebook.unpack(str(path), str(tmp_path / "dest"))


def test_fingerprinting_never_opens_a_link_or_a_special_file(tmp_path):
    """A link to /dev/zero would be read forever, a FIFO would block: each is hashed by what it is."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "gelu.py").write_text("x = 1")
    (folder / "zero").symlink_to("/dev/zero")
    os.mkfifo(folder / "pipe")
    first = gradebook.fingerprint(str(folder), "autograder")
    (folder / "gelu.py").write_text("x = 2")
    assert gradebook.fingerprint(str(folder), "autograder") != first
    assert gradebook.fingerprint(str(folder), "other autograder") != gradebook.fingerprint(str(folder), "autograder")


def test_file_names_are_unique_per_student_and_cells_never_formulas():
    assert gradebook.file_name("jo.kim+ml@x.edu") != gradebook.file_name("jo.kim_ml@x.edu")
    assert gradebook.file_name("jo.kim+ml@x.edu") == gradebook.file_name("jo.kim+ml@x.edu")  # (stable)
    assert gradebook.file_name("../../etc/passwd").startswith("_.._etc_passwd-")
    for cell in ("=HYPERLINK(1)", "+1", "-1", "@SUM(1)", "\tx", "\rx"):
        assert gradebook._cell(cell) == "'" + cell
    assert gradebook._cell("ann") == "ann"


PRINTS = '    print("error: the grader crashed")\n    print("isolation reduced: forged by the student")\n'


def _prints_a_forged_status(folder):
    """A solved LayerNorm whose task code prints lines that look like the grader's own."""
    path = folder / "layernorm.py"
    lines = path.read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if "x_hat, inv_std, weight = ctx.saved_tensors" in line)
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines[at:at] = [indent + line.strip() for line in PRINTS.strip("\n").split("\n")]
    path.write_text("\n".join(lines))


@pytest.mark.slow  # (eight gradings; the README's run grades a class of six, a garbled zip among them)
def test_a_broken_or_hostile_submission_costs_only_its_own_row(assignment, tmp_path):
    python = os.path.join(require_isolation(), "bin", "python")
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    _student(assignment, submissions / "solved", "solved")
    for kind, (data, _) in broken_zips().items():
        (submissions / f"{kind}.zip").write_bytes(data)
    _student(assignment, submissions / "zero", "solved")
    (submissions / "zero" / "big.py").symlink_to("/dev/zero")
    _student(assignment, submissions / "fifo", "solved")
    os.mkfifo(submissions / "fifo" / "pipe")
    _student(assignment, submissions / "=HYPERLINK(1)", "solved")
    _student(assignment, submissions / "jo.kim+ml@x.edu", "blank")
    _student(assignment, submissions / "jo.kim_ml@x.edu", "solved")
    _student(assignment, submissions / "printer", "solved")
    _prints_a_forged_status(submissions / "printer")
    _student(assignment, submissions / "outside", "solved")  # (an edit outside the regions: told in the feedback)
    gelu = submissions / "outside" / "gelu.py"
    gelu.write_text(gelu.read_text() + "\nSCALE = 1.0\n")
    rows, log = _grade_all(submissions, assignment, tmp_path / "grades.csv", python)
    got = {r["student"]: (r["total"], r["status"]) for r in rows}
    for kind in broken_zips():
        assert got[kind][0] == "0" and got[kind][1].startswith("not graded: "), got[kind]
    for student in ("solved", "zero", "fifo", "'=HYPERLINK(1)", "jo.kim_ml@x.edu", "printer", "outside"):
        assert got[student] == ("5", "graded"), (student, got[student], log[-3000:])
    assert got["jo.kim+ml@x.edu"] == ("0", "graded")
    feedback = tmp_path / "feedback"
    assert "Total: 0 points" in (feedback / (gradebook.file_name("jo.kim+ml@x.edu") + ".md")).read_text()
    assert "Total: 5 points" in (feedback / (gradebook.file_name("jo.kim_ml@x.edu") + ".md")).read_text()
    assert "forged" not in log and "the grader crashed" not in log.split("\n")[-2]
    outside = (feedback / (gradebook.file_name("outside") + ".md")).read_text()
    assert "edited outside the task regions (not graded): 'SCALE = 1.0'" in outside, outside
    printed = (tmp_path / "logs" / (gradebook.file_name("printer") + ".log")).read_text()
    assert "error: the grader crashed" in printed  # (kept whole in the student's log, for the instructor)


def _export(folder, submissions):
    """Gradescope's export: ``submissions`` is {id: ([emails], created_at)}."""
    lines = []
    for sub, (emails, created) in submissions.items():
        lines += [f"submission_{sub}:", "  :submitters:"]
        for n, email in enumerate(emails):
            lines += [f"  - :name: Student {sub}-{n}", f"    :sid: '{sub}{n}'", f"    :email: {email}"]
        lines += [f"  :created_at: {created}", "  :score: 0.0"]
    (folder / gradebook.METADATA).write_text("\n".join(lines) + "\n")


def test_a_group_gets_a_row_each_lateness_overrides_and_flags_for_review(assignment, tmp_path):
    python = os.path.join(require_isolation(), "bin", "python")
    export = tmp_path / "export"
    export.mkdir()
    _student(assignment, export / "submission_1", "solved")
    _student(assignment, export / "submission_2", "dishonest")
    _export(export, {1: (["a@x.edu", "b@x.edu"], "2026-12-01 10:30:00.123456789 -08:00"),
                     2: (["c@x.edu"], "2026-12-01 08:59:00.000000000 -08:00")})
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("student,task,points,comment\nc@x.edu,gelu_backward,1,partial credit after review\n")
    done = subprocess.run([python, "-m", "tinyattn.homework", "grade-all", str(export), "--autograder",
                           str(assignment / "autograder"), "--csv", str(tmp_path / "grades.csv"), "--timeout", "60",
                           "--overrides", str(overrides), "--due", "2026-12-01T09:00-08:00"],
                          capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(CHECKOUT)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 flagged for review" in done.stdout
    with open(tmp_path / "grades.csv", encoding="utf-8", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"a@x.edu", "b@x.edu", "c@x.edu"}
    for member in ("a@x.edu", "b@x.edu"):
        assert (rows[member]["total"], rows[member]["late"], rows[member]["flags"]) == ("5", "1.50", "")
        assert rows[member]["submission"] == "submission_1"
    c = rows["c@x.edu"]
    assert (c["gelu_backward"], c["total"], c["late"], c["flags"]) == ("1", "4", "", "gelu_backward")
    assert c["status"] == "graded; overridden by the instructor"
    feedback = (tmp_path / "feedback" / (gradebook.file_name("c@x.edu") + ".md")).read_text()
    assert "partial credit after review" in feedback and "Total: 4 points" in feedback
    review = subprocess.run([python, "-m", "tinyattn.homework", "review", "--csv", str(tmp_path / "grades.csv")],
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(CHECKOUT)})
    assert review.returncode == 0, review.stderr
    assert "c@x.edu: gelu_backward (derive), gelu.py, line 3 of the task's code: the attribute .forward" in \
        review.stdout, review.stdout
    assert "GELU.forward(ctx, x + h)" in review.stdout and "a@x.edu" not in review.stdout


@pytest.mark.slow  # (four gradings; the fifty's test regrades after a change too)
def test_a_fixed_autograder_regrades_everyone_and_says_whose_grade_changed(assignment, tmp_path):
    """The instructor finds a bug in a judge (here: every GELU test fails), fixes it, and runs grade-all again."""
    python = os.path.join(require_isolation(), "bin", "python")
    autograder = tmp_path / "autograder"
    shutil.copytree(assignment / "autograder", autograder)
    judges = autograder / "tests" / "judges.py"
    fixed = judges.read_text()
    judges.write_text(fixed.replace('    prop = PROPERTIES.get(test)\n',
                                    '    prop = PROPERTIES.get(test)\n    _check("gelu" not in test, "a bug")\n'))
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    for kind in ("solved", "partly"):
        _student(assignment, submissions / kind, kind)
    run = [python, "-m", "tinyattn.homework", "grade-all", str(submissions), "--autograder", str(autograder),
           "--csv", str(tmp_path / "grades.csv"), "--timeout", "60"]
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
    first = subprocess.run(run, capture_output=True, text=True, timeout=900, env=env)
    assert "2 graded now" in first.stdout, first.stdout + first.stderr
    judges.write_text(fixed)
    again = subprocess.run(run, capture_output=True, text=True, timeout=900, env=env)
    assert "2 graded now, 0 unchanged" in again.stdout, again.stdout + again.stderr
    assert "changed: solved: 3 -> 5 (+2)" in again.stdout
    assert "changed: partly" not in again.stdout
