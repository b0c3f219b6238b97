"""The library's source holds the library alone, and reads as one: facts about the code itself.

Each test reads the source (``ast``) or the objects, so a change that brings back explainer
or grader state into the core, nests a display name inside the math, or re-opens the
import cycle between ops and ``Tensor`` fails here.
"""

import ast
import inspect
import pathlib
import sys

import tinyattn
from tinyattn import nn
from tinyattn.autograd import backprop, engine
from tinyattn.autograd.core import engine as core_engine
from tinyattn.autograd.core.ops.elementwise import Elementwise
from tinyattn.autograd.function import Function, Node
from tinyattn.nn import functional as F

PACKAGE = pathlib.Path(tinyattn.__file__).parent
LIBRARY = [p for p in PACKAGE.rglob("*.py") if "homework" not in p.parts]
OPS = sorted((PACKAGE / "autograd" / "core" / "ops").glob("*.py"))


def parse(path):
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_no_wrong_answers_in_the_library_source():
    for path in LIBRARY:
        assert "# MUTANT:" not in path.read_text(encoding="utf-8"), path


def test_a_node_keeps_what_backward_needs_and_nothing_for_display():
    # the core's node: the op, what forward saved, where the inputs' gradients go and their expected shape/dtype
    a = tinyattn.randn(2, 3, requires_grad=True)
    b = tinyattn.randn(3, 4)
    node = (a @ b).grad_fn
    assert isinstance(node, Node)
    assert set(vars(node)) == {"fn", "ctx", "edges", "input_meta", "saved_versions"}
    # torch's node adds the versions of the saved inputs (backward's safety check; for a backward recorded as ops,
    # the inputs that saved arrays are); once freed, only the op and the edges are left
    (a @ b).sum().backward()
    node.release()
    assert node.ctx is None and node.input_meta == () and node.saved_versions == () and len(node.edges) == 2


def test_the_engine_takes_no_hook():
    """No engine function takes a hook; the core's pass never mentions one; torch's pass runs tensor hooks in one
    place, where it takes a node's complete gradient (autograd/backprop.py)."""
    for name, fn in inspect.getmembers(engine, inspect.isfunction):
        if fn.__module__ == engine.__name__:
            assert "hook" not in inspect.signature(fn).parameters, name
    assert "hook" not in inspect.getsource(core_engine)
    assert "hook" not in inspect.getsource(engine)
    lines = [line for line in inspect.getsource(backprop).splitlines() if "hooks.run(" in line]
    assert len(lines) == 1 and "grad_output = hooks.run(node, grad_output)" in lines[0], lines


def test_no_op_imports_tensor():
    for path in OPS:
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.ImportFrom):
                assert node.module not in ("tensor", "..tensor") and "tensor" not in (node.module or "").split(".")
                assert "Tensor" not in [a.name for a in node.names], (path, node.lineno)
            if isinstance(node, ast.Import):
                assert not any("tensor" in a.name for a in node.names), path


def test_names_are_given_by_statements_never_inside_an_expression():
    for path in sorted((PACKAGE / "nn").glob("*.py")):
        tree = parse(path)
        statement_values = {
            id(s.value) for s in ast.walk(tree) if isinstance(s, (ast.Assign, ast.AnnAssign, ast.Return, ast.Expr))
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "named":
                assert id(node) in statement_values, f"{path.name}:{node.lineno}: .named() nested in an expression"


def test_every_backward_calls_the_upstream_gradient_grad_output():
    for path in OPS:
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.FunctionDef) and node.name == "backward":
                args = [a.arg for a in node.args.args]
                assert args in (["ctx", "grad_output"], ["cls", "ctx", "grad_output"]), (path.name, node.lineno)
                names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                assert not names & {"g", "dy", "grad"}, (path.name, node.lineno, names & {"g", "dy", "grad"})


def functions_in_ops():
    return {
        (path.name, node.name)
        for path in OPS
        for node in parse(path).body
        if isinstance(node, ast.ClassDef) and any(getattr(b, "id", None) in ("Function", "Elementwise")
                                                  for b in node.bases)
        and node.name != "Elementwise"  # (the base of the elementwise ops, not an op)
        and any(isinstance(f, ast.FunctionDef) and f.name in ("forward", "function") for f in node.body)
    }


def test_the_ops_index_lists_every_op_in_its_file():
    index = (PACKAGE / "autograd" / "core" / "ops" / "__init__.py").read_text(encoding="utf-8")
    listed = set()
    for line in index.splitlines():
        if line.startswith("- ``") and ".py``:" in line:
            file, ops = line[4:].split("``:", 1)
            listed |= {(file, op) for op in ops.split(", and")[0].replace("``", "").split()}
    built_on_elementwise = {("elementwise.py", op.__name__) for op in Elementwise.__subclasses__()}
    assert listed == functions_in_ops() - built_on_elementwise
    assert "every one-input op\n  built on ``Elementwise``" in index


# torch's module names that are also an op's: each module's docstring sends the reader to the op
SHARED_WITH_TORCH = {"Softmax": "core/ops/softmax.py", "LogSoftmax": "core/ops/softmax.py",
                     "Tanh": "core/ops/elementwise.py", "Sigmoid": "core/ops/elementwise.py"}


def test_functions_and_modules_never_share_a_name():
    modules = {name for name, obj in vars(nn).items() if isinstance(obj, type) and issubclass(obj, nn.Module)}
    shared = modules & {name for _, name in functions_in_ops()}
    assert modules and shared == set(SHARED_WITH_TORCH)
    for name, where in SHARED_WITH_TORCH.items():
        assert f"autograd/{where}" in getattr(nn, name).__doc__, name
    assert issubclass(nn.Linear, nn.Module) and not issubclass(nn.Linear, Function)


def test_the_attention_core_is_short_and_multihead_attention_uses_it(monkeypatch):
    source = inspect.getsource(F.multi_head_attention)
    body = source.split('"""')[2]  # after the docstring
    code = [line for line in body.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert len(code) <= 30, len(code)
    for step in ("# 1. Project", "# 2. Split heads", "# 3. head_i", "# 4. Concat", "# 5. Output projection"):
        assert step in body
    calls = []
    real = F.multi_head_attention
    monkeypatch.setattr(F, "multi_head_attention", lambda *a, **k: calls.append(1) or real(*a, **k))
    mha = nn.MultiheadAttention(4, 2)
    x = tinyattn.randn(3, 2, 4)
    mha(x, x, x)
    assert calls == [1]


CORE = sorted((PACKAGE / "autograd" / "core").rglob("*.py"))
# the standard library, NumPy, and the trampolines the mutation tool writes into a copy it mutates (docs/mutation.md)
OUTSIDE_ALLOWED = set(sys.stdlib_module_names) | {"numpy", "mutmut"}


def test_the_core_imports_only_the_standard_library_numpy_and_itself():
    """core/ is the lesson: whatever else tinyattn holds, a student reading it meets nothing from outside."""
    core = PACKAGE / "autograd" / "core"
    for path in CORE:
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.ImportFrom) and node.level:
                target = path.parent
                for _ in range(node.level - 1):
                    target = target.parent
                assert target == core or core in target.parents, (path.name, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                top = (node.module or "").split(".")[0]
                assert top in OUTSIDE_ALLOWED, (path.name, node.lineno, node.module)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    assert top in OUTSIDE_ALLOWED, (path.name, node.lineno, alias.name)
    assert {p.name for p in CORE} >= {"__init__.py", "tensor.py", "function.py", "engine.py", "checks.py",
                                      "grad_mode.py", "dtypes.py", "softmax.py", "matmul.py"}


SPINE = CORE


def _plain_code_faults(source, name):
    """What makes ``source`` packed rather than plain: statements joined by ``;``, conditional expressions nested in
    one another or inside an ``if``/``while`` condition, and comments about a measured cost."""
    faults = []
    tree = ast.parse(source, filename=name)
    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp) and any(isinstance(part, ast.IfExp) for part in (node.test, node.body,
                                                                                        node.orelse)):
            faults.append(f"{name}:{node.lineno}: a conditional expression inside another")
        if isinstance(node, (ast.If, ast.While)) and any(isinstance(n, ast.IfExp) for n in ast.walk(node.test)):
            faults.append(f"{name}:{node.lineno}: a conditional expression inside a condition")
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for first, second in zip(body, body[1:]):
                if first.end_lineno == second.lineno:
                    faults.append(f"{name}:{second.lineno}: two statements on one line")
    for number, line in enumerate(source.split("\n"), 1):
        comment = line.split("#", 1)[1] if "#" in line else ""
        if any(word in comment for word in (" µs", "% at ", "% faster", "% slower", "x slower", "x faster",
                                            "count_instructions")):
            faults.append(f"{name}:{number}: a comment about a measured cost")
    return faults


def test_the_autograd_spine_is_plain_code():
    """The files a student reads for the chain rule: one statement per line, no conditional expression nested in
    another or in a condition, no comment about a measured cost (those belong in commit messages and
    docs/performance.md)."""
    faults = [f for path in SPINE for f in _plain_code_faults(path.read_text(encoding="utf-8"), path.name)]
    assert faults == []


def test_the_plain_code_check_finds_each_kind_of_packing():
    packed = ("a = 1; b = 2\n"
              "c = 1 if a else 2 if b else 3\n"
              "if a if b else c:\n    pass\n"
              "d = 0  # a call costs 2% at the chapter's size\n")
    assert sorted(_plain_code_faults(packed, "x.py")) == [
        "x.py:1: two statements on one line", "x.py:2: a conditional expression inside another",
        "x.py:3: a conditional expression inside a condition", "x.py:5: a comment about a measured cost"]


def _imports_under(folder, package):
    """Each module under ``folder`` (dotted, inside ``package``) -> the modules of the same tree it imports, at the
    top or inside a function (what a type checker alone reads, under ``if TYPE_CHECKING:``, left out)."""
    graph = {}
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        here = list(parts[:-1])
        checking = set()
        tree = parse(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                checking.update(id(n) for n in ast.walk(node))
        targets = set()
        for node in ast.walk(tree):
            if id(node) in checking or not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = here[: len(here) - node.level + 1]
            module = ".".join(base + (node.module.split(".") if node.module else []))
            for alias in node.names:
                child = f"{module}.{alias.name}"
                targets.add(child if child in graph or (folder.parent / (child.replace(".", "/") + ".py")).exists()
                            else module)
        graph[name] = targets
    return {name: {t for t in targets if t in graph and t != name} for name, targets in graph.items()}


def _a_circle(graph):
    """One import circle of ``graph`` (a list of modules, the first repeated at the end), or None."""
    state = {}

    def visit(name, path):
        state[name] = "open"
        for target in sorted(graph[name]):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target, path + [target])
                if found:
                    return found
        state[name] = "done"
        return None

    for name in sorted(graph):
        if name not in state:
            found = visit(name, [name])
            if found:
                return found
    return None


def test_no_import_circle_under_autograd():
    """Each module of autograd/ imports only what lies below it (a package imports its own modules: not a
    circle), so that it can be read, and tested, from the bottom up."""
    graph = _imports_under(PACKAGE / "autograd", "tinyattn")
    for name in graph:
        graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    assert graph["autograd.tensor"] and _a_circle(graph) is None, _a_circle(graph)


def test_the_circle_finder_finds_a_circle():
    assert _a_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _a_circle({"a": {"b"}, "b": set()}) is None



def imports_of(source, package):
    """The modules of tinyattn that ``source`` (a module of the package ``package``, as a list of names) imports,
    anywhere in it: type-checking blocks and functions too."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                candidate = f"{module}.{alias.name}"  # (from . import engine: the module engine)
                found.add(candidate if module_path(candidate) else module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {m for m in found if module_path(m)}


def module_path(name):
    parts = name.split(".")
    if parts[0] != "tinyattn":
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def first_circle(graph):
    """A circle of ``graph`` (module -> the modules it imports), as the list of its modules, or None."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return trail + [node, nxt]
            if nxt not in state:
                found = visit(nxt, trail + [node])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def autograd_graph():
    """Each module under autograd/ -> the modules under autograd/ it imports (a package's ``__init__`` left out: it
    imports its modules to re-export them)."""
    autograd = PACKAGE / "autograd"
    graph = {}
    for path in sorted(autograd.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        name = ".".join(["tinyattn", *path.relative_to(PACKAGE).with_suffix("").parts])
        package = ["tinyattn", *path.relative_to(PACKAGE).parent.parts]
        graph[name] = {m for m in imports_of(path.read_text(encoding="utf-8"), package)
                       if autograd in module_path(m).parents and module_path(m).name != "__init__.py"}
    return graph


def test_no_import_circle_under_autograd_type_checking_imports_included():
    graph = autograd_graph()
    assert len(graph) > 30 and "tinyattn.autograd.core.tensor" in graph["tinyattn.autograd.tensor"]
    assert first_circle(graph) is None


def test_a_type_checking_import_back_is_a_circle():
    graph = autograd_graph()
    mixin = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .tensor import Tensor\n"
    graph["tinyattn.autograd.engine"] |= imports_of(mixin, ["tinyattn", "autograd"])
    assert first_circle(graph)[-2:] in (["tinyattn.autograd.engine", "tinyattn.autograd.tensor"],
                                         ["tinyattn.autograd.tensor", "tinyattn.autograd.engine"])
