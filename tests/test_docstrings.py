"""Every public name has a docstring whose first line says what it does (the API reference is built from them)."""

import importlib
import inspect

import pytest

# The modules whose names the API reference documents (docs/reference/), each page one of them.
PUBLIC_MODULES = [
    "tinyattn", "tinyattn.autograd", "tinyattn.autograd.core", "tinyattn.autograd.forward_ad", "tinyattn.func",
    "tinyattn.nn", "tinyattn.nn.functional",
    "tinyattn.nn.init", "tinyattn.optim", "tinyattn.utils.data", "tinyattn.explain", "tinyattn.homework",
]


def public_names(module):
    """``__all__``, or else the functions and classes the module defines without a leading underscore."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [k for k, v in vars(module).items() if not k.startswith("_")
            and (inspect.isfunction(v) or inspect.isclass(v)) and v.__module__ == module.__name__]


def documented():
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        yield module_name, module
        for name in public_names(module):
            obj = getattr(module, name)
            if not inspect.ismodule(obj) and not getattr(obj, "__module__", "tinyattn").startswith("tinyattn"):
                continue  # NumPy's dtypes under torch's names (ta.float32 is np.float32): NumPy documents them
            yield f"{module_name}.{name}", obj
            if inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    if not attr.startswith("_") and (callable(value) or isinstance(value, (property, staticmethod,
                                                                                          classmethod))):
                        yield f"{module_name}.{name}.{attr}", getattr(obj, attr)


CASES = dict(documented())


@pytest.mark.parametrize("name", sorted(CASES))
def test_public_name_has_a_summary_line(name):
    obj = CASES[name]
    doc = inspect.getdoc(obj) if not inspect.ismodule(obj) else inspect.cleandoc(obj.__doc__ or "")
    assert doc, f"{name} has no docstring"
    first = doc.splitlines()[0].strip()
    short = name.rsplit(".", 1)[-1]
    assert first.endswith((".", ":")), f"{name}: the first line is not a sentence: {first!r}"
    assert first.strip("`.:() ").lower() != short.lower(), f"{name}: the first line only repeats the name"
    assert len(first) >= 10, f"{name}: the first line says too little: {first!r}"


def test_the_reference_covers_every_public_module():
    """docs/reference/ has a page per public module; mkdocstrings renders each module's public names."""
    import pathlib

    pages = pathlib.Path(__file__).parents[1] / "docs" / "reference"
    text = "\n".join(p.read_text(encoding="utf-8") for p in pages.glob("*.md"))
    for module in PUBLIC_MODULES:
        assert f"::: {module}\n" in text, module
