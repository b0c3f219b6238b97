"""The grader's walks over student trees (``trees.py``) and its one sanitiser (``untrusted.py``), on their own."""

from __future__ import annotations

import os

import pytest

from tinyattn.homework import trees, untrusted


def _deep(root, depth, name="d"):
    """A chain of ``depth`` folders under ``root``, made by relative steps (its full path is far past PATH_MAX)."""
    here = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=here)
        inner = os.open(name, os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = inner
    with open(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=here), "w") as f:
        f.write("x")
    os.close(here)


def test_remove_deletes_a_tree_deeper_than_the_recursion_limit_and_than_a_path_may_be_long(tmp_path):
    root = tmp_path / "deep"
    root.mkdir()
    _deep(str(root), 5000)
    removed, problem = trees.remove(str(root))
    assert problem == "" and removed == 5000 + 1 + 1  # the folders, the leaf, the root
    assert not root.exists()


def test_remove_never_follows_a_link_out_of_the_tree(tmp_path):
    outside = tmp_path / "keep"
    outside.mkdir()
    (outside / "precious.txt").write_text("mine")
    root = tmp_path / "tree"
    (root / "a").mkdir(parents=True)
    (root / "a" / "link").symlink_to(outside, target_is_directory=True)
    (root / "file-link").symlink_to(outside / "precious.txt")
    assert trees.remove(str(root)) == (4, "")
    assert (outside / "precious.txt").read_text() == "mine"


def test_remove_stops_at_its_count_and_says_so_without_raising(tmp_path):
    root = tmp_path / "wide"
    root.mkdir()
    for i in range(50):
        (root / f"f{i}").write_text("x")
    removed, problem = trees.remove(str(root), max_entries=10)
    assert removed == 10 and "more than 10 entries; the rest are left" in problem
    assert trees.remove(str(tmp_path / "absent")) == (0, "")


def test_files_lists_plain_files_in_order_and_says_what_its_caps_left_out(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "b.py").write_text("")
    (tmp_path / "pkg" / "sub" / "a.py").write_text("")
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "x.pyc").write_text("")
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg", target_is_directory=True)
    listing = trees.files(str(tmp_path / "pkg"), skip=("__pycache__",))
    assert listing.files == ["b.py", "loop", "sub/a.py"] and listing.cut == ""  # (the link: listed, not entered)
    _deep(str(tmp_path / "pkg"), 100, name="deep")
    listing = trees.files(str(tmp_path / "pkg"), max_depth=8)
    assert "folders deeper than 8 levels" in listing.cut
    listing = trees.files(str(tmp_path / "pkg"), max_entries=3)
    assert "more than 3 entries" in listing.cut


def test_text_replaces_lone_surrogates_controls_and_bidirectional_overrides_once_each():
    hostile = "a\ud800b\udcff\x1b[2J\r\x00\u202e\u2066ok\n\tend"
    safe = untrusted.text(hostile)
    assert safe == "a\ufffdb\ufffd\ufffd[2J\ufffd\ufffd\ufffd\ufffdok\n\tend"
    safe.encode("utf-8")  # (would raise on a lone surrogate)
    assert untrusted.text("x" * 20, limit=5) == "xxxxx [... 15 more characters]"
    assert untrusted.text("plain: 日本語 ✓") == "plain: 日本語 ✓"
    with pytest.raises(TypeError, match="expected a str, got bytes"):
        untrusted.text(b"bytes")  # type: ignore[arg-type]


def test_a_cleanup_that_fails_is_logged_and_grading_goes_on(tmp_path, monkeypatch):
    """Whatever breaks while a task's folder is removed, the next task is graded and the log says what broke."""
    from tinyattn.homework import commands, sandbox

    out = tmp_path / "hw"
    commands.assign(str(out), ["softmax_backward", "adam_step"])
    commands.solve(str(out / "student"), ["softmax_backward", "adam_step"])

    def broken(path, max_entries=0):
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(sandbox.trees, "remove", broken)
    results, table = commands.grade(str(out / "student"), str(out / "autograder"), timeout=60,
                                    unconfined=True)
    assert results["score"] == 8
    assert "cleanup: removing the task's folder failed: RuntimeError: the disk went away" in table
