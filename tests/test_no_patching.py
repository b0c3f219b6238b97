"""What a student reads is what runs: no module of tinyattn changes another's classes or functions at run time.

Walks every module of the package (its syntax, as a reader sees it) and fails on

* an assignment to, or ``setattr`` on, anything a module imported (a class, a function or a module of another
  file: ``Function.apply = ...``, ``engine.step = ...``);
* an assignment to an op's or a function's machinery on any object (``cls.apply = ...``, ``f.__defaults__ = ...``);
* a registry: a function that stores a value handed to it in a module global, through which one module would
  replace what another makes. The switches that hold a setting (grad mode, the default dtype, the explainer's
  recorder, the random generator) are listed below, each with what it holds; none holds a class.
"""

import ast
import pathlib
import subprocess

import pytest

import tinyattn

PACKAGE = pathlib.Path(tinyattn.__file__).parent
MACHINERY = {"apply", "forward", "backward", "jvp", "__defaults__", "__kwdefaults__", "__code__", "__class__"}
# module -> globals a function sets from its argument: a setting, never a class
SWITCHES = {
    "autograd/core/grad_mode.py": {"_grad_enabled": "grad mode, a bool", "_recorder": "the explainer's recorder"},
}


def imported_names(tree):
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
    return names


def root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def inside_init(tree, node):
    return any(isinstance(f, ast.FunctionDef) and f.name == "__init__" and node in ast.walk(f) for f in ast.walk(tree))


def findings(source, path="<module>"):
    """Each place in ``source`` that changes another module's classes or functions, or is a registry."""
    tree = ast.parse(source)
    imported = imported_names(tree)
    found = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            targets = [t for target in targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and node.args:
            targets = [ast.Attribute(value=node.args[0], attr="?", lineno=node.lineno)]
        for target in targets:
            if not isinstance(target, ast.Attribute):
                continue
            if target.attr.isupper():  # (a setting of another module, a number: probing.BUDGET = ...)
                continue
            if root(target) == "self" and inside_init(tree, node):  # (an object's own fields, as it is made)
                continue
            if root(target) in imported:
                found.append(f"{path}:{node.lineno}: assigns to {ast.unparse(target)}, of another module")
            elif target.attr in MACHINERY:
                found.append(f"{path}:{node.lineno}: replaces {ast.unparse(target)}")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            declared = {name for n in ast.walk(node) if isinstance(n, ast.Global) for name in n.names}
            params = {a.arg for a in node.args.args + node.args.kwonlyargs}
            for n in ast.walk(node):
                if isinstance(n, ast.Assign):
                    pairs = []
                    for target in n.targets:
                        if isinstance(target, ast.Tuple) and isinstance(n.value, ast.Tuple):
                            pairs += list(zip(target.elts, n.value.elts))
                        else:
                            pairs.append((target, n.value))
                    for target, value in pairs:
                        if (isinstance(target, ast.Name) and target.id in declared and isinstance(value, ast.Name)
                                and value.id in params):
                            found.append(f"{path}:{n.lineno}: {node.name}() keeps its argument {value.id} in the "
                                         f"module global {target.id}")
    return found


def package_findings():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for line in findings(path.read_text(encoding="utf-8"), rel):
            name = line.rsplit(" ", 1)[-1]
            if "module global" in line and name in SWITCHES.get(rel, {}):
                continue
            found.append(line)
    return found


def test_no_module_patches_another_and_no_registry_replaces_a_class():
    assert package_findings() == []


@pytest.mark.parametrize("source, what", [
    ("from .core.function import Function\nFunction.apply = classmethod(lambda cls: None)\n", "of another module"),
    ("from . import engine\nengine.backpropagate = None\n", "of another module"),
    ("from .graph import GraphNode\ndef f(node):\n    GraphNode.backward = node\n", "of another module"),
    ("class Hooks:\n    def add(self):\n        self.forward = None\n", "replaces self.forward"),
    ("import tinyattn\nsetattr(tinyattn.Tensor, 'exp', None)\n", "of another module"),
    ("class F:\n    def __init_subclass__(cls):\n        cls.apply = classmethod(run)\n", "replaces cls.apply"),
    ("def f(x=1):\n    pass\nf.__defaults__ = (2,)\n", "replaces f.__defaults__"),
    ("Tensor = None\ndef register(tensor):\n    global Tensor\n    Tensor = tensor\n", "module global Tensor"),
])
def test_each_kind_of_patch_is_found(source, what):
    found = findings(source)
    assert len(found) == 1 and what in found[0], found


def test_the_switches_listed_hold_settings_and_are_still_there():
    for rel, names in SWITCHES.items():
        text = (PACKAGE / rel).read_text(encoding="utf-8")
        for name in names:
            assert f"global {name}" in text, (rel, name)


def test_the_design_before_this_one_is_found_by_the_walk():
    """(The core as it was: a registry, a swapped apply, an apply replaced at subclassing.)"""
    root_dir = PACKAGE.parent
    try:
        old = subprocess.run(["git", "-C", str(root_dir), "show", "5988731:tinyattn/autograd/forward_ad.py"],
                             capture_output=True, text=True, check=True).stdout
        registry = subprocess.run(["git", "-C", str(root_dir), "show", "5988731:tinyattn/autograd/core/registry.py"],
                                  capture_output=True, text=True, check=True).stdout
        custom = subprocess.run(["git", "-C", str(root_dir), "show",
                                 "5988731:tinyattn/autograd/custom_function.py"],
                                capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no git history here (an installed copy)")
    assert any("Function.apply" in line for line in findings(old))
    assert any("module global Tensor" in line for line in findings(registry))
    assert any("replaces cls.apply" in line for line in findings(custom))
