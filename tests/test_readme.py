"""The README's Python snippets (and docs/torch.md's) run as written, in order; its two commands match .ci/run; the
test counts it states are the suite's, within 10%."""

import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return f.read()


def torch_page():
    with open(os.path.join(ROOT, "docs", "torch.md"), encoding="utf-8") as f:
        return f.read()


def test_python_snippets_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the training snippet saves a checkpoint in the working folder
    namespace = {}
    for name, text in (("README.md", readme()), ("docs/torch.md", torch_page())):
        for block in re.findall(r"```python\n(.*?)```", text, re.S):
            exec(compile(block, name, "exec"), namespace)
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


def test_readme_is_lesson_first_and_short():
    text = readme()
    assert len(text.splitlines()) <= 200
    first_screen = "\n".join(text.splitlines()[:40])
    assert "multi_head_attention" in first_screen and "softmax(Q Kᵀ / √d_k) V" in first_screen


def _stated_counts():
    tests = readme().split("## Tests", 1)[1]
    with_torch = re.search(r"collects ([\d,]+) tests with the torch extra", tests)
    without = re.search(r"([\d,]+) without it", tests)
    assert with_torch and without, "the README's Tests section states both counts"
    return int(with_torch.group(1).replace(",", "")), int(without.group(1).replace(",", ""))


def test_the_test_counts_the_readme_states_are_the_suite_s_within_ten_percent():
    """The README's test command, collected here as it runs it (with torch if this environment has it)."""
    try:
        import torch  # noqa: F401 - (is the torch extra installed?)
        stated = _stated_counts()[0]
    except ImportError:
        stated = _stated_counts()[1]
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    last = done.stdout.strip().splitlines()[-1]
    found = re.match(r"(\d+)(?:/\d+)? tests? collected", last)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    collected = int(found.group(1))
    assert abs(collected - stated) <= 0.1 * stated, f"the README states {stated} tests; the suite has {collected}"
