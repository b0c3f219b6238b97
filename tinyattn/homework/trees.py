"""Walking and removing folder trees the student made: without recursion, without following links, capped.

A student's code can leave a tree ten thousand folders deep, or a million files wide, in its
home, in a shared folder, or inside the submission itself. A recursive walk (``os.walk`` before
Python 3.12, ``shutil.rmtree``) then raises ``RecursionError``; a walk by full paths fails past
the 4,096 bytes of a Linux path. Both would stop the grader in the middle of a grading.

So both walks here hold one open folder at a time and move by names relative to it
(``dir_fd``): ``files`` lists a tree's plain files down to a depth and up to a count, and says
what it left out; ``remove`` deletes a whole tree however deep (up to a count of entries),
climbing back through ``..``, which is safe once every process of the student has ended.
Neither raises: what they could not do, they report.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)


@dataclass
class Listing:
    """The plain files of a tree (relative paths, ``/``-separated) and what the caps left out."""

    files: list[str] = field(default_factory=list)
    cut: str = ""  # "" when the whole tree was listed; else why not (too deep, too many entries)


def files(root: str, skip: tuple[str, ...] = (), max_depth: int = 32, max_entries: int = 10_000) -> Listing:
    """The plain files under ``root`` (links are not followed; folders named in ``skip`` are not entered)."""
    listing, seen = Listing(), 0
    stack: list[str] = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = sorted(os.scandir(os.path.join(root, rel) if rel else root), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > max_entries:
                listing.cut = f"more than {max_entries} entries: the rest were not looked at"
                return listing
            path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode) and entry.name not in skip:
                if path.count("/") + 1 >= max_depth:
                    listing.cut = f"folders deeper than {max_depth} levels were not looked into"
                else:
                    stack.append(path)
            elif not stat.S_ISDIR(mode):
                listing.files.append(path)
    listing.files.sort()
    return listing


def remove(path: str, max_entries: int = 1_000_000) -> tuple[int, str]:
    """Delete ``path`` and everything under it; ``(entries removed, "" or why some are left)``.

    One folder is open at a time: its plain entries are unlinked, its first folder is entered,
    and an emptied folder is left through ``..`` and removed. A link is removed, never followed.
    """
    try:
        info = os.lstat(path)
    except OSError:
        return 0, ""
    if not stat.S_ISDIR(info.st_mode):
        try:
            os.unlink(path)
            return 1, ""
        except OSError as err:
            return 0, f"{path}: {err.strerror}"
    removed = 0
    names: list[str] = []  # the folders entered below ``path``, outermost first
    try:
        here = os.open(path, _DIRECTORY)
    except OSError as err:
        return 0, f"{path}: {err.strerror}"
    try:
        while True:
            deeper = None
            with os.scandir(here) as entries:
                for entry in entries:
                    if removed >= max_entries:
                        return removed, f"{path}: more than {max_entries} entries; the rest are left"
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            deeper = entry.name
                            break
                        os.unlink(entry.name, dir_fd=here)
                        removed += 1
                    except OSError:
                        continue
            if deeper is not None:
                try:
                    inner = os.open(deeper, _DIRECTORY, dir_fd=here)
                except OSError:
                    try:
                        os.rmdir(deeper, dir_fd=here)  # (an empty folder that cannot be opened)
                        removed += 1
                        continue
                    except OSError as err:
                        return removed, f"{path}: {err.strerror} ({len(names) + 1} levels down)"
                os.close(here)
                here = inner
                names.append(deeper)
                continue
            if not names:
                break
            parent = os.open("..", _DIRECTORY, dir_fd=here)
            os.close(here)
            here = parent
            try:
                os.rmdir(names.pop(), dir_fd=here)
                removed += 1
            except OSError as err:
                return removed, f"{path}: {err.strerror} ({len(names) + 1} levels down)"
    finally:
        os.close(here)
    try:
        os.rmdir(path)
        removed += 1
    except OSError as err:
        return removed, f"{path}: {err.strerror}"
    return removed, ""
