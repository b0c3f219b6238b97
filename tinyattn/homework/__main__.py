"""``python -m tinyattn.homework assign|check|grade|solve|tasks|mistakes`` (also ``tinyattn-homework``)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from .markers import MarkerError


def _task_list(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run one command; returns the exit status."""
    p = argparse.ArgumentParser(prog="python -m tinyattn.homework", description="Turn tinyattn into graded homework.")
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("assign", help="write OUT/student, OUT/autograder and OUT/manifest.json")
    a.add_argument("out")
    a.add_argument("--tasks", help="comma-separated task ids (default: all)")
    c = sub.add_parser("check", help="self-check: reference passes, blanks and mutants are caught")
    c.add_argument("--tasks", help="comma-separated task ids (default: all)")
    c.add_argument("--timeout", type=float, default=600.0)
    g = sub.add_parser("grade", help="grade a student copy and write Gradescope's results.json")
    g.add_argument("student_dir")
    g.add_argument("--autograder", help="the autograder folder (default: ../autograder beside STUDENT_DIR)")
    g.add_argument("--json", dest="json_path", metavar="RESULTS_JSON")
    g.add_argument("--timeout", type=float, default=300.0, help="seconds per task's test run (default 300)")
    s = sub.add_parser("solve", help="put the reference code of some tasks back into a student copy")
    s.add_argument("student_dir")
    s.add_argument("--tasks", required=True)
    sub.add_parser("tasks", help="list the tasks, their regions and their tests")
    sub.add_parser("mistakes", help="print the common mistakes (the self-check's mutants) as a Markdown table")
    args = p.parse_args(argv)

    from . import commands

    try:
        if args.command == "assign":
            data = commands.assign(args.out, _task_list(args.tasks))
            total = sum(t["points"] for t in data["tasks"].values())
            print(f"wrote {args.out}/student, {args.out}/autograder, {args.out}/manifest.json: "
                  f"{len(data['tasks'])} tasks, {total:g} points")
        elif args.command == "check":
            ok, table = commands.check(_task_list(args.tasks), timeout=args.timeout)
            print(table)
            return 0 if ok else 1
        elif args.command == "grade":
            beside = os.path.join(os.path.dirname(os.path.abspath(args.student_dir)), "autograder")
            autograder = args.autograder or beside
            _, table = commands.grade(args.student_dir, autograder, args.json_path, args.timeout)
            print(table)
        elif args.command == "solve":
            commands.solve(args.student_dir, _task_list(args.tasks))
            print(f"restored the reference code of {args.tasks} in {args.student_dir}")
        elif args.command == "mistakes":
            commands.load()  # every mistake must still name a line of its task
            print(commands.mistakes_markdown())
        elif args.command == "tasks":
            _, regions, tests, chosen = commands.load()
            for task in chosen:
                where = ", ".join(f"{r.path}:{r.begin + 1}" for r in regions[task])
                points = sum(t.points for t in tests if t.task == task)
                print(f"{task:<22} {points:>4g} pts  {len([t for t in tests if t.task == task])} tests  {where}")
    except MarkerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
