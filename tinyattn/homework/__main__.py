"""``python -m tinyattn.homework assign|check|grade|grade-all|review|solve|tasks|mistakes|guide``
(also ``tinyattn-homework``).

Every misuse (a wrong path, a folder that is not a student copy, an unknown or empty task
list, a time limit that is not positive) ends with one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import traceback
from typing import Sequence

from .. import __version__
from .markers import MarkerError


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line: ``error: ...``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Print one line and exit with status 2."""
        self.exit(2, f"error: {message} (see --help)\n")


def _task_list(text: str | None) -> list[str] | None:
    """``--tasks a,b``: the ids; None when the option was not given; [] when it was given empty."""
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def _policies(text: str) -> dict[str, str]:
    """``--policy a=derive,b=open``: task -> policy name."""
    out = {}
    for item in (t.strip() for t in text.split(",") if t.strip()):
        task, sep, name = item.partition("=")
        if not sep or not task.strip() or not name.strip():
            raise argparse.ArgumentTypeError(f"expected TASK=POLICY, got {item!r}")
        out[task.strip()] = name.strip()
    return out


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def _tell_progress(done: int, total: int, what: str) -> None:
    """``check``'s progress on stderr, one line per finished test run (the table goes to stdout)."""
    print(f"[{done}/{total}] {what}", file=sys.stderr, flush=True)


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = _Parser(prog="python -m tinyattn.homework", description="Turn tinyattn into graded homework.",
                epilog="The instructor's guide (tasks, grading, Gradescope, common mistakes): "
                       "python -m tinyattn.homework guide")
    p.add_argument("--version", action="version", version=f"tinyattn {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    a = sub.add_parser("assign", help="write OUT/student, OUT/autograder, OUT/manifest.json and a Gradescope zip")
    a.add_argument("out")
    a.add_argument("--tasks", help="comma-separated task ids (default: all)")
    a.add_argument("--policy", type=_policies, default={}, metavar="TASK=POLICY[,...]",
                   help="what a task's code may call, instead of what course.toml says: derive, no-imports, open")
    a.add_argument("--on-flag", choices=("review", "withhold"), default=None,
                   help="what a flag from the policy's code check does to the task's points: review keeps them and "
                        "flags the row, withhold sets them aside until reviewed (default: course.toml's, else review)")
    c = sub.add_parser("check", help="self-check: reference passes; blanks, mistakes and isolation are right")
    c.add_argument("--tasks", help="comma-separated task ids (default: all)")
    c.add_argument("--timeout", type=_seconds, default=600.0, help="seconds per test run (default 600)")
    g = sub.add_parser("grade", help="grade a submission, each task on its own; write Gradescope's results.json")
    g.add_argument("student_dir")
    g.add_argument("--autograder", help="the autograder folder (default: ../autograder beside STUDENT_DIR)")
    g.add_argument("--json", dest="json_path", metavar="RESULTS_JSON")
    g.add_argument("--timeout", type=_seconds, default=300.0, help="seconds per task's test run (default 300)")
    g.add_argument("--private", action="append", default=[], metavar="FOLDER",
                   help="a folder the student's code must not read (checked when grading as root; repeatable)")
    g.add_argument("--without", type=_task_list, default=[], metavar="FENCE[,FENCE...]",
                   help="kernel fences not to use, as if the kernel refused them: namespaces, cgroup, oom, keyrings, "
                        "threads (to see what holds without them; run_autograder passes TINYATTN_GRADER_WITHOUT)")
    g.add_argument("--gradescope", action="store_true",
                   help="always write RESULTS_JSON and exit 0, a submission that cannot be graded scoring 0 "
                        "with the reason (what run_autograder uses)")
    g.add_argument("--unconfined", action="store_true",
                   help="grade even where the student's code would run without the student user or a fence (not "
                        "root, a Python that user cannot run, a kernel that refuses one); the results say so")
    g.add_argument("--as-user", default="tinyattn-student", metavar="NAME",
                   help="the user the student's code runs as, when grading as root (default tinyattn-student; "
                        "made on first use; gradings at once need one each)")
    ga = sub.add_parser("grade-all", help="grade every submission in a folder into a CSV gradebook and feedback files")
    ga.add_argument("submissions", help="a folder holding a folder or a .zip per student, or Gradescope's export")
    ga.add_argument("--autograder", required=True, help="the autograder folder `assign` wrote")
    ga.add_argument("--csv", required=True, dest="csv_path", metavar="GRADES_CSV")
    ga.add_argument("--feedback", metavar="DIR", help="where each student's feedback goes (default: feedback/ "
                                                       "beside the CSV)")
    ga.add_argument("--workers", type=int, default=None, help="gradings at once (default: the machine's cores)")
    ga.add_argument("--timeout", type=_seconds, default=300.0, help="seconds per task (default 300)")
    ga.add_argument("--overrides", metavar="CSV", help="the instructor's points: a CSV of student, task, points, "
                                                       "comment (applied to the gradebook, shown in the feedback)")
    ga.add_argument("--due", metavar="WHEN", help="the due date, ISO 8601 (2026-12-01T23:59-08:00): the late "
                                                  "column gives the hours after it (Gradescope's :created_at:)")
    r = sub.add_parser("review", help="list the flags of the last grade-all, with their evidence")
    r.add_argument("--csv", required=True, dest="csv_path", metavar="GRADES_CSV")
    s = sub.add_parser("solve", help="put the reference code of some tasks back into a student copy")
    s.add_argument("student_dir")
    s.add_argument("--tasks", required=True, type=_task_list)
    t = sub.add_parser("tasks", help="list the tasks, their regions and their tests")
    t.add_argument("--markdown", action="store_true", help="print docs/teaching.md's table of the tasks instead")
    m = sub.add_parser("mistakes", help="print the common mistakes (the self-check's mutants) as a Markdown table")
    for command in (a, c, g, s, t, m):
        command.add_argument("--course", metavar="DIR",
                             help="a course folder (with course.toml) to use instead of the library's own tasks"
                             + ("; without --autograder, it is assigned afresh to grade" if command is g else ""))
    sub.add_parser("guide", help="print the instructor's guide (docs/teaching.md), shipped with the package")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run one command; returns the exit status."""
    args = parser().parse_args(argv)
    from . import commands
    from .gradebook import GradebookError

    try:
        course = commands.course_at(args.course) if getattr(args, "course", None) else None
        if args.command == "assign":
            data = commands.assign(args.out, _task_list(args.tasks), args.policy, course, args.on_flag)
            total = sum(t["points"] for t in data["tasks"].values())
            count = len(data["tasks"])
            print(f"wrote {args.out}/student, {args.out}/autograder, {args.out}/manifest.json and "
                  f"{args.out}/gradescope_autograder.zip: {count} task{'s' if count != 1 else ''}, {total:g} points")
        elif args.command == "check":
            ok, table = commands.check(_task_list(args.tasks), timeout=args.timeout, progress=_tell_progress,
                                       course=course)
            print(table)
            return 0 if ok else 1
        elif args.command == "grade":
            if args.gradescope and not args.json_path:
                raise commands.HomeworkError("grade: --gradescope needs --json RESULTS_JSON")
            beside = os.path.join(os.path.dirname(os.path.abspath(args.student_dir)), "autograder")
            autograder = args.autograder or beside
            if course is not None and not args.autograder:  # the course's autograder, made afresh
                made = tempfile.mkdtemp(prefix="tinyattn-course-")
                commands.assign(os.path.join(made, "out"), None, None, course)
                autograder = os.path.join(made, "out", "autograder")
            try:
                _, table = commands.grade(args.student_dir, autograder, args.json_path, args.timeout,
                                          private=tuple(args.private), adopt_orphans=True,
                                          without=tuple(args.without), user=args.as_user,
                                          unconfined=args.unconfined)
            except (commands.HomeworkError, MarkerError) as err:
                if not args.gradescope:
                    raise
                with open(args.json_path, "w", encoding="utf-8") as f:  # Gradescope shows the reason
                    json.dump(commands.failed_results(autograder, str(err)), f, indent=2)
                print(f"error: {err}", file=sys.stderr)
                return 0
            except commands.GraderFailed as err:  # the results file says so; the log gets the traceback
                traceback.print_exc()
                print(f"error: {err}", file=sys.stderr)
                return 0 if args.gradescope else 1
            print(table)
        elif args.command == "grade-all":
            from . import gradebook

            if args.workers is not None and args.workers < 1:
                raise commands.HomeworkError(f"grade-all: --workers must be at least 1, got {args.workers}")
            try:
                run = gradebook.grade_all(args.submissions, args.autograder, args.csv_path, args.feedback,
                                          args.workers, args.timeout, gradebook.progress_bar(), args.overrides,
                                          args.due)
            except gradebook.Stopped as stopped:
                print(f"\n{stopped}", file=sys.stderr)
                return 130
            failed = [g for g in run.graded if g.status != "graded"]
            flagged = [g for g in run.graded if g.flags]
            print(f"wrote {args.csv_path}: {len(run.graded)} submissions, {len(run.fresh)} graded now, "
                  f"{len(run.graded) - len(run.fresh)} unchanged since the last run"
                  + (f"; {len(failed)} not graded (see the status column)" if failed else "")
                  + (f"; {len(flagged)} flagged for review (`review --csv {args.csv_path}`)" if flagged else ""))
            for student, was, now in run.changed:
                print(f"changed: {student}: {was:g} -> {now:g} ({now - was:+g})")
            if run.reduced:
                print(f"note: {run.reduced}")
        elif args.command == "review":
            from . import gradebook

            print(gradebook.review(args.csv_path))
        elif args.command == "solve":
            commands.solve(args.student_dir, args.tasks, course)
            print(f"restored the reference code of {','.join(args.tasks)} in {args.student_dir}")
        elif args.command == "guide":
            from .shipped import shipped_text

            print(shipped_text("teaching.md"), end="")
        elif args.command == "mistakes":
            commands.load(None, course)  # every mistake must still name a line of its task
            print(commands.mistakes_markdown(course))
        elif args.command == "tasks" and args.markdown:
            print(commands.tasks_markdown(course))
        elif args.command == "tasks":
            _, regions, tests, chosen = commands.load(None, course)
            for task in chosen:
                where = ", ".join(f"{r.path}:{r.begin + 1}" for r in regions[task])
                points = sum(t.points for t in tests if t.task == task)
                print(f"{task:<22} {points:>4g} pts  {len([t for t in tests if t.task == task])} tests  {where}")
    except (MarkerError, commands.HomeworkError, GradebookError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
