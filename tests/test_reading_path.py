"""docs/reading.md, the reading path from the chapter's equations to the code: it is what
scripts/reading_path.py writes today (so every line it links still says what the page quotes), and each
link lands on that line of the source page the docs build makes."""

import html
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import reading_path  # noqa: E402


def test_the_page_is_the_script_s_output():
    """(A line that moved: `python scripts/reading_path.py > docs/reading.md`.)"""
    assert (ROOT / "docs" / "reading.md").read_text(encoding="utf-8") == reading_path.page()


def test_each_link_lands_on_the_line_it_quotes():
    page = (ROOT / "docs" / "reading.md").read_text(encoding="utf-8")
    links = re.findall(r"\[`([^`]+)`\]\(source/(\S+?)\.md#L(\d+)\)", page)
    assert len(links) >= 15
    for quoted, path, line in links:
        source = reading_path.source_page(path)
        anchor = f'<span id="L{line}">'
        row = next(r for r in source.split("\n") if r.startswith(anchor) or f'<pre class="source">{anchor}' in r)
        assert html.escape(quoted) in row, (path, line, quoted)
        assert (ROOT / path).read_text(encoding="utf-8").split("\n")[int(line) - 1].find(quoted) >= 0


def test_it_walks_the_five_steps_then_the_engine():
    titles = re.findall(r"^## \d+\. (.+)$", (ROOT / "docs" / "reading.md").read_text(encoding="utf-8"), re.M)
    assert titles[0] == "The five steps, in one function" and "The backward pass" in titles
    assert titles.index("Scaled scores and the softmax") < titles.index("The backward pass")
