"""An object whose @td.function method has run is freed once unreferenced,
as in TensorFlow: the per-instance function cache refers to it weakly."""

import gc
import weakref

import numpy as np
import pytest

import treadle as td


class Scaler(td.Module):
    def __init__(self, k):
        super().__init__()
        self.k = td.Variable(float(k))

    @td.function
    def __call__(self, x):
        return x * self.k

    @td.function(input_signature=[td.TensorSpec([None], td.float32)])
    def shifted(self, x):
        if td.reduce_sum(x) > 0:  # converted control flow, too
            return x + self.k
        return x - self.k


class Plain:
    def __init__(self):
        self.scale = 3.0

    @td.function
    def run(self, x):
        return x * self.scale


def test_objects_with_traced_methods_are_freed():
    refs = []
    for i in range(20):
        obj = Scaler(i)
        np.testing.assert_allclose(obj(td.constant([1.0, 2.0])).numpy(), [i, 2.0 * i])
        np.testing.assert_allclose(obj.shifted(td.constant([1.0])).numpy(), [1.0 + i])
        obj.get_concrete_function = obj.__call__.get_concrete_function(td.TensorSpec([2], td.float32))
        refs.append(weakref.ref(obj))
        plain = Plain()
        np.testing.assert_allclose(plain.run(td.constant(2.0)).numpy(), 6.0)
        refs.append(weakref.ref(plain))
    del obj, plain
    gc.collect()
    assert [r for r in refs if r() is not None] == []
    assert len(Scaler.__call__._instances) == 0 and len(Plain.run._instances) == 0


def test_freed_without_the_cycle_collector():
    obj = Plain()
    obj.run(td.constant(1.0))
    ref = weakref.ref(obj)
    del obj
    assert ref() is None  # reference counting alone frees it: the cache holds no cycle through it


def test_a_method_kept_keeps_its_object_as_a_python_bound_method_does():
    obj = Plain()
    ref = weakref.ref(obj)
    method = obj.run
    assert method(td.constant(2.0)).numpy() == 6.0
    del obj
    gc.collect()
    assert ref() is not None
    assert method(td.constant([5.0, 1.0], td.float64)).numpy().tolist() == [15.0, 3.0]  # a new trace
    del method
    gc.collect()
    assert ref() is None


def test_a_method_called_on_a_temporary_object():
    # The object lives for the call (TensorFlow: `Model().call(x)` works).
    assert Plain().run(td.constant(2.0)).numpy() == 6.0
    method = Plain().run
    assert method(td.constant(1.0)).numpy() == 3.0


def test_each_instance_still_traces_its_own_method():
    a, b = Plain(), Plain()
    b.scale = 5.0
    assert a.run(td.constant(1.0)).numpy() == 3.0
    assert b.run(td.constant(1.0)).numpy() == 5.0
    assert a.run.__func__ is a.run.__func__ and a.run.__func__ is not b.run.__func__
    assert list(a.run.function_spec.parameters) == ["x"]
