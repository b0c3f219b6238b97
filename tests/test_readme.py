"""The README's Python snippets run as written, in order, and its two commands match .ci/run."""

import os
import re

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return f.read()


def test_python_snippets_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the training snippet saves a checkpoint in the working folder
    namespace = {}
    for block in re.findall(r"```python\n(.*?)```", readme(), re.S):
        exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["out"].shape == (3, 5, 16)
    assert np.all(np.isfinite(namespace["mha"].in_proj_weight.grad))
    assert namespace["checkpoint"]["epoch"] == 3 and (tmp_path / "checkpoint.pt").exists()


def test_first_lines_give_the_two_commands_and_ci_runs_the_test_one():
    lines = readme().split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()
    main_cmd, test_cmd = (line.split("#")[0].strip() for line in lines[:2])
    assert main_cmd == "pip install -e . && python examples/train_toy.py"
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        ci = f.read()
    assert test_cmd in ci.splitlines()


def test_explainer_excerpt_is_real_output():
    from tinyattn.explain import mha as explain

    text = readme().split("## See the gradients flow")[1].split("```text\n")[1].split("```")[0]
    output = explain.walkthrough(explain.parser().parse_args([]))
    for line in text.splitlines():
        if line.strip() and line.strip() != "...":
            assert line in output, line


def test_cost_excerpt_is_real_output():
    from tinyattn.explain import mha as explain

    section = readme().split("**Why is attention memory-bound?**")[1]
    command = re.search(r"`python -m tinyattn.explain (--cost[^`]*)`", section).group(1).split()
    text = section.split("```text\n")[1].split("```")[0]
    output = explain.walkthrough(explain.parser().parse_args(command))
    lines = [line for line in text.splitlines() if line.strip() and line.strip() != "..."]
    assert len(lines) >= 8
    for line in lines:
        assert line in output.splitlines(), line


def test_graph_picture_in_the_readme_is_the_current_layout():
    """The PNG carries its layout's fingerprint; redraw with `python -m tinyattn.explain --graph docs/mha_graph.png`."""
    from PIL import Image

    from tinyattn.explain import mha as explain
    from tinyattn.explain.graph import layout

    assert "](docs/mha_graph.png)" in readme()
    stored = Image.open(os.path.join(ROOT, "docs", "mha_graph.png")).text["Description"]
    _, _, steps = explain.build(explain.parser().parse_args([]))
    assert stored == f"tinyattn layout {layout(steps, explain.MHA_GROUPS).fingerprint()}", "redraw docs/mha_graph.png"


def test_page_screenshot_in_the_readme_is_the_current_page():
    """The PNG carries the page's fingerprint; redraw with `python scripts/page_screenshot.py`."""
    import importlib.util

    from PIL import Image

    assert "](docs/walkthrough_page.png)" in readme()
    path = os.path.join(ROOT, "scripts", "page_screenshot.py")
    spec = importlib.util.spec_from_file_location("page_screenshot", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    stored = Image.open(os.path.join(ROOT, "docs", "walkthrough_page.png")).text["Description"]
    assert stored == f"tinyattn page {script.fingerprint()}", "redraw docs/walkthrough_page.png"
