"""The notebooks run in a real Jupyter kernel (nbclient + ipykernel), each asserting what it shows; they
are stored without outputs; and the explainer's figures show inline without changing pyplot's backend."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
REQUIRED = os.environ.get("TINYATTN_REQUIRE_NOTEBOOKS") == "1"  # CI: a missing kernel fails, it does not skip


def kernel_tools():
    try:
        import ipykernel  # noqa: F401
        import nbformat
        from nbclient import NotebookClient
    except ImportError as err:
        if REQUIRED:
            pytest.fail(f"TINYATTN_REQUIRE_NOTEBOOKS=1 but {err.name} is not installed")
        pytest.skip(f"{err.name} is not installed (pip install nbclient ipykernel)")
    return nbformat, NotebookClient


def execute(path, tmp_path):
    nbformat, NotebookClient = kernel_tools()
    book = nbformat.read(path, as_version=4)
    NotebookClient(book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    return book


def outputs(cell, kind):
    return [o for o in cell.get("outputs", []) if kind in o.get("data", {})]


def test_there_are_three_notebooks_stored_without_outputs():
    import json

    assert len(NOTEBOOKS) >= 3
    for path in NOTEBOOKS:
        book = json.loads(path.read_text(encoding="utf-8"))
        for cell in book["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_and_its_assertions_hold(path, tmp_path):
    book = execute(path, tmp_path)  # a failing assert raises CellExecutionError
    errors = [o for cell in book.cells for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []


def test_the_explainer_shows_inline_once_and_leaves_pyplot_working(tmp_path):
    book = execute(ROOT / "notebooks" / "01_gradient_through_mha.ipynb", tmp_path)
    code = [c for c in book.cells if c.cell_type == "code"]
    by_source = {c.source.splitlines()[-1]: c for c in code}
    assert outputs(by_source["w  # the step table"], "text/html")  # walkthrough(): the step table
    assert "<table class='tinyattn-steps'" in outputs(by_source["w  # the step table"], "text/html")[0]["data"][
        "text/html"]
    assert len(outputs(by_source["w.graph()"], "image/png")) == 1  # .graph(): shown, once
    assert len(outputs(by_source["fig"], "image/png")) == 1  # .heatmaps()
    assert len(outputs(by_source["maps"], "image/png")) == 1  # show_heatmaps(...), after a savefig
    assert (tmp_path / "heads.png").stat().st_size > 5_000
    assert "<iframe srcdoc=" in outputs(by_source["w.page()"], "text/html")[0]["data"]["text/html"]  # the page
    last = code[-1]
    assert "plt.show()" in last.source and len(outputs(last, "image/png")) == 1  # pyplot still shows inline
