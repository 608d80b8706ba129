"""dir() of each public module lists only public names: no helper modules
it imported (context, inspect, numpy, ...) and none of the package's
internal modules; public submodules (td.nn, td.loom.trees, ...) are listed."""

import importlib
import types

import pytest

import treadle as td

PUBLIC_MODULES = ["treadle", "treadle.math", "treadle.nn", "treadle.linalg", "treadle.random", "treadle.bitwise",
                  "treadle.config", "treadle.debugging", "treadle.nest", "treadle.saved_model", "treadle.train",
                  "treadle.types", "treadle.experimental", "treadle.autograph", "treadle.errors", "treadle.loom",
                  "treadle.data", "treadle.data.experimental", "treadle.optimizers", "treadle.keras",
                  "treadle.keras.layers", "treadle.keras.initializers", "treadle.keras.losses",
                  "treadle.keras.optimizers", "treadle.keras.optimizers.schedules", "treadle.distribute",
                  "treadle.sparse", "treadle.strings", "treadle.testing", "treadle.device_config"]
# Public submodules, by their dotted names.
PUBLIC_SUBMODULES = set(PUBLIC_MODULES) | {"treadle.raw_ops", "treadle.loom.trees", "treadle.loom.fold_options",
                                           "treadle.experimental.dlpack", "treadle.autograph.experimental"}


def leaks(module):
    out = []
    for name in dir(module):
        if name.startswith("_"):
            continue
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            if value.__name__ not in PUBLIC_SUBMODULES:
                out.append(f"{name} (the module {value.__name__})")
        elif (callable(value) or isinstance(value, type)) and not getattr(value, "__module__", "treadle") \
                .startswith(("treadle", "builtins")) and not isinstance(value, td.DType):
            out.append(f"{name} (from {value.__module__})")
    return out


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_dir_lists_only_public_names(module_name):
    module = importlib.import_module(module_name)
    assert not leaks(module), f"dir({module_name}) lists {leaks(module)}"


def test_public_names_are_listed():
    assert {"function", "constant", "nn", "loom", "keras", "Module", "Variable"} <= set(dir(td))
    assert {"SGD", "Adam", "AdamW", "Adagrad", "RMSprop"} <= set(dir(td.optimizers))
    assert {"trees", "Weaver", "Ragged"} <= set(dir(td.loom))
    assert set(dir(td.optimizers)) == set(td.optimizers.__all__)


def test_the_check_finds_a_leak():
    fake = types.ModuleType("treadle.fake")
    fake.inspect = importlib.import_module("inspect")
    fake.dumps = importlib.import_module("json").dumps
    assert leaks(fake) == ["dumps (from json)", "inspect (the module inspect)"]
