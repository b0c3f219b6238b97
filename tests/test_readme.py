"""The README's Python snippets run as written, in order, and its two commands match .ci/run."""

import os
import re

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return f.read()


def test_python_snippets_run():
    namespace = {}
    for block in re.findall(r"```python\n(.*?)```", readme(), re.S):
        exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["out"].shape == (3, 5, 16)
    assert np.all(np.isfinite(namespace["mha"].in_proj_weight.grad))


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
