"""``scripts/torch_coverage.py`` reads the torch names a program uses, through every way of importing them,
and says which ``import tinyattn as torch`` provides."""

from __future__ import annotations

import importlib.util
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("torch_coverage", os.path.join(ROOT, "scripts", "torch_coverage.py"))
tool = importlib.util.module_from_spec(spec)
sys.modules["torch_coverage"] = tool  # (its dataclasses look their module up)
spec.loader.exec_module(tool)

PROGRAM = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.dataloader import default_collate
from torch import optim as optimisers

torch.backends.cudnn.benchmark = True
model = nn.Sequential(nn.Linear(4, 8), nn.ConvTranspose3d(1, 1, 3))
nn.init.xavier_uniform_(model[0].weight)
loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=2)
opt = optimisers.AdamW(model.parameters())
for (x,) in loader:
    loss = F.relu(model[0](x)).sum()
    loss.backward()
    x.view(-1).unfold(0, 2, 1)
'''


def test_every_way_of_naming_torch_is_read_and_checked_against_tinyattn(tmp_path):
    (tmp_path / "program.py").write_text(PROGRAM)
    notebook = {"cells": [{"cell_type": "code", "source": ["import torch\n", "!pip install x\n", "torch.tril(t)"]},
                          {"cell_type": "markdown", "source": "torch.nothing"}]}
    (tmp_path / "notebook.ipynb").write_text(json.dumps(notebook))
    table = tool.coverage([str(tmp_path)])
    expected_provided = {
        "torch.nn.Linear", "torch.nn.Sequential", "torch.nn.init.xavier_uniform_", "torch.nn.functional.relu",
        "torch.utils.data.DataLoader", "torch.utils.data.TensorDataset", "torch.utils.data.dataloader",
        "torch.utils.data.dataloader.default_collate", "torch.optim.AdamW", "torch.backends.cudnn.benchmark",
        "torch.randn", "torch.tril", "Tensor.backward", "Tensor.view", "Tensor.sum",
    }
    for name in expected_provided:
        assert table[name]["provided"] is True, name
    assert table["torch.nn.ConvTranspose3d"]["provided"] is False
    assert table["torch.tril"]["programs"] == [str(tmp_path / "notebook.ipynb")]
    assert "torch.nothing" not in table  # (markdown is not code)
    assert len(table["torch.randn"]["programs"]) == 1


def test_the_table_counts_programs_and_filters_by_them(tmp_path, capsys):
    for i in range(3):
        (tmp_path / f"p{i}.py").write_text("import torch\n" + ("torch.nn.ConvTranspose3d(1, 1, 1)\n" if i else "") +
                                           "torch.ones(2)\n")
    (tmp_path / "broken.py").write_text("def (:\n")
    tool.main([str(tmp_path), "--min-programs", "2", "--json", str(tmp_path / "out.json")])
    printed = capsys.readouterr().out
    assert "torch.ones" in printed and "torch.nn.ConvTranspose3d" in printed and "NO" in printed
    assert "3 names used by 2 or more programs: 2 provided, 1 not" in printed  # (torch: the module imported)
    data = json.loads((tmp_path / "out.json").read_text())
    assert len(data["torch.ones"]["programs"]) == 3 and data["torch.ones"]["provided"]


def test_a_corpus_is_recorded_from_local_copies_and_checked_by_name(tmp_path, capsys):
    (tmp_path / "build").mkdir()
    (tmp_path / "held").mkdir()
    (tmp_path / "build" / "a.py").write_text("import torch\nx = torch.ones(2)\nx.view(-1)\n"
                                              "torch.nn.ConvTranspose3d(1, 1, 1)\n")
    (tmp_path / "held" / "b.py").write_text("import torch.nn as nn\nnn.ConvTranspose3d(1, 1, 1)\nnn.Linear(2, 2)\n")
    sources = tmp_path / "sources.tsv"
    sources.write_text("build/a.py\towner/a\tsrc/a.py\t" + "1" * 40 + "\nheld/b.py\towner/b\tb.py\t" + "2" * 40 + "\n")
    out = tmp_path / "corpus.json"
    assert tool.main(["--record", str(sources), "--root", str(tmp_path), "--out", str(out)]) == 0
    corpus = json.loads(out.read_text())
    sets = {p["repo"]: p["set"] for p in corpus["programs"]}
    assert sets == {"owner/a": "build", "owner/b": "held-out"}
    names = {p["repo"]: set(p["names"]) for p in corpus["programs"]}
    assert {"torch.ones", "Tensor.view", "torch.nn.ConvTranspose3d"} <= names["owner/a"]
    assert "torch.nn.Linear" in names["owner/b"]
    # ConvTranspose3d: used by both, not provided, no reason given: --check fails and names it
    assert tool.main(["--corpus", str(out), "--min-programs", "2", "--check"]) == 1
    assert "missing, with no reason given in the corpus: torch.nn.ConvTranspose3d" in capsys.readouterr().out
    corpus["impossible"] = {"torch.nn.ConvTranspose3d": "a reason"}
    out.write_text(json.dumps(corpus))
    assert tool.main(["--corpus", str(out), "--min-programs", "2", "--check"]) == 0
    assert "torch.nn.ConvTranspose3d: not provided: a reason" in capsys.readouterr().out
    doc = tmp_path / "coverage.md"
    doc.write_text("# intro kept\n\n<!-- BEGIN GENERATED: x -->\nold\n<!-- END GENERATED -->\n")
    tool.main(["--corpus", str(out), "--min-programs", "2", "--markdown", str(doc)])
    text = doc.read_text()
    assert text.startswith("# intro kept") and "old" not in text
    assert "| `torch.nn.ConvTranspose3d` | 2 | no: a reason |" in text and "| held-out | owner/b | `b.py` |" in text


def test_the_repository_s_corpus_passes_its_check_and_the_docs_table_is_current(tmp_path, capsys):
    corpus_path = os.path.join(ROOT, "docs", "corpus.json")
    with open(corpus_path) as f:
        corpus = json.load(f)
    assert len(corpus["programs"]) >= 60
    assert all(len(p["commit"]) == 40 and p["names"] for p in corpus["programs"])
    assert sum(p["set"] == "held-out" for p in corpus["programs"]) >= 10
    assert tool.main(["--corpus", corpus_path, "--min-programs", "2", "--check"]) == 0
    doc = tmp_path / "coverage.md"
    with open(os.path.join(ROOT, "docs", "coverage.md")) as f:
        current = f.read()
    doc.write_text(current)
    tool.main(["--corpus", corpus_path, "--min-programs", "2", "--markdown", str(doc)])
    assert doc.read_text() == current, ("docs/coverage.md is out of date: python scripts/torch_coverage.py "
                                        "--corpus docs/corpus.json --min-programs 2 --markdown docs/coverage.md")
