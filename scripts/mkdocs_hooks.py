"""MkDocs hooks: the README is the site's home page and examples/README.md its examples page; the source files
the reading path (docs/reading.md) links are pages too, each line with an anchor (``#L42``).

All live outside ``docs/`` (GitHub shows them where they are), so they are added here as
generated pages, the READMEs' links rewritten from the repository's layout to the site's.
"""

from __future__ import annotations

import os
import sys

from mkdocs.structure.files import File, Files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reading_path  # noqa: E402 - (scripts/reading_path.py, beside this file)

PAGES = {"index.md": "README.md", "examples.md": os.path.join("examples", "README.md")}


def _site_links(text: str) -> str:
    """The README's links as the repository has them (``docs/x.md``, ``examples/README.md``) made the site's."""
    return text.replace("](docs/", "](").replace("](examples/README.md)", "](examples.md)")


def on_files(files: Files, config) -> Files:  # noqa: ANN001 (mkdocs' config object)
    """Add the two READMEs, and the source files the reading path links, as generated pages."""
    for page, source in PAGES.items():
        with open(os.path.join(ROOT, source), encoding="utf-8") as f:
            files.append(File.generated(config, page, content=_site_links(f.read())))
    for path in reading_path.linked_files():
        files.append(File.generated(config, f"source/{path}.md", content=reading_path.source_page(path)))
    return files
