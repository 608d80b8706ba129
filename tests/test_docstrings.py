"""Every public name treadle defines beyond TensorFlow's has a docstring, and
so has every public method and property of its classes: `help()` shows text,
and the API reference (generated from the docstrings) has no empty entries."""

import importlib
import inspect
import types

import pytest

import treadle as td

# The namespaces that are treadle's own (or that treadle fills with classes of its own).
MODULES = ["treadle.loom", "treadle.loom.trees", "treadle.loom.fold_options", "treadle.data",
           "treadle.data.experimental", "treadle.optimizers", "treadle.keras", "treadle.keras.layers",
           "treadle.keras.initializers", "treadle.keras.losses", "treadle.keras.optimizers",
           "treadle.keras.optimizers.schedules"]
OBJECTS = {"td.Module": td.Module, "td.save": td.save, "td.load": td.load}


def public_names(module):
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    return [n for n in names if not isinstance(getattr(module, n), types.ModuleType)]


def documented(obj):
    return bool((inspect.getdoc(obj) or "").strip())


def members_without_docstring(name, cls):
    missing = []
    for klass in cls.__mro__:
        if klass is object or not klass.__module__.startswith("treadle"):
            continue
        for key, value in vars(klass).items():
            if key.startswith("_") and key not in ("__call__",):
                continue
            target = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
            if (callable(target) or isinstance(value, property)) and not documented(getattr(cls, key, target)):
                missing.append(f"{name}.{key}")
    return missing


def undocumented(name, obj):
    if not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismethod(obj) or callable(obj)):
        return []
    missing = [] if documented(obj) else [name]
    if inspect.isclass(obj):
        missing += members_without_docstring(name, obj)
    return missing


def all_public():
    out = dict(OBJECTS)
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for n in public_names(module):
            out[f"{module_name}.{n}"] = getattr(module, n)
    return out


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_name_has_a_docstring(module_name):
    module = importlib.import_module(module_name)
    assert documented(module), f"{module_name} has no module docstring"
    missing = sorted({m for n in public_names(module) for m in undocumented(f"{module_name}.{n}", getattr(module, n))})
    assert not missing, f"public names without a docstring: {missing}"


def test_module_and_saving_have_docstrings():
    missing = [m for name, obj in OBJECTS.items() for m in undocumented(name, obj)]
    assert not missing, missing


def test_help_shows_text():
    assert "batch_size" in inspect.getdoc(td.data.Dataset.batch) or "batches" in inspect.getdoc(td.data.Dataset.batch)
    assert inspect.getdoc(td.data.Dataset.map).strip()
    assert "tf.Module" in inspect.getdoc(td.Module)


def test_the_check_finds_a_missing_docstring():
    class Undocumented:
        def method(self):
            pass
    Undocumented.__module__ = "treadle.fake"
    assert undocumented("X", Undocumented) == ["X", "X.method"]
