"""td.device, td.config's device functions (TensorFlow 2's answers on a
CPU-only machine) and td.variable_creator_scope, eagerly and inside
td.function."""

import pytest

import treadle as td


@pytest.mark.filterwarnings("ignore:.*retracing")  # one trace per device string, on purpose
@pytest.mark.parametrize("spec", ["/CPU:0", "/cpu:0", "CPU", "/device:CPU:0",
                                  "/job:localhost/replica:0/task:0/device:CPU:0", "/GPU:0", "GPU:1", "", None])
def test_device_scopes_accept_specifications_and_run_on_the_cpu(spec):
    with td.device(spec):
        x = td.constant([1.0, 2.0]) * 2.0
    assert x.numpy().tolist() == [2.0, 4.0]
    assert _add_one_on(td.constant(1.0), spec).numpy() == 2.0


@td.function
def _add_one_on(y, spec):
    with td.device(spec):
        return y + 1.0


@pytest.mark.parametrize("spec, message", [("foo", "Unknown attribute 'foo'"), ("CPU:0:1", "Unknown attribute 'CPU'"),
                                           ("/cpu:x", "not a device index"), ("/replica:a", "not a device index"),
                                           ("/cpu:0/gpu:0", "Multiple device types")])
def test_device_refuses_what_is_not_a_specification(spec, message):
    scope = td.device(spec)  # checked when entered, as in TensorFlow
    with pytest.raises(ValueError, match=message):
        with scope:
            pass


@pytest.mark.parametrize("spec", ["/job:worker/device:CPU:0", "/task:1", "/replica:2/cpu:0"])
def test_device_of_another_process_is_unknown(spec):
    with pytest.raises(td.errors.InvalidArgumentError, match="unknown device"):
        with td.device(spec):
            pass


def test_device_functions_are_refused_as_in_tensorflow_2():
    with pytest.raises(RuntimeError, match="does not support functions"):
        td.device(lambda op: "/cpu:0")


def test_config_lists_one_cpu_and_no_gpu():
    cpus = td.config.list_physical_devices("CPU")
    assert cpus == [td.config.PhysicalDevice("/physical_device:CPU:0", "CPU")]
    assert td.config.list_physical_devices() == cpus
    assert td.config.list_physical_devices("GPU") == []
    assert td.config.experimental.list_physical_devices("GPU") == []
    assert [d.name for d in td.config.list_logical_devices()] == ["/device:CPU:0"]
    assert td.config.get_visible_devices() == cpus
    td.config.set_visible_devices(cpus)
    td.config.set_visible_devices([], "GPU")
    with pytest.raises(ValueError, match="Cannot hide the CPU"):
        td.config.set_visible_devices([])
    # The usual GPU set-up loop does nothing here, as in TensorFlow on a CPU-only machine.
    for gpu in td.config.experimental.list_physical_devices("GPU"):
        td.config.experimental.set_memory_growth(gpu, True)
    with pytest.raises(ValueError, match="non-GPU"):
        td.config.experimental.set_memory_growth(cpus[0], True)
    with pytest.raises(ValueError, match="Unrecognized device"):
        td.config.experimental.set_memory_growth("GPU:0", True)
    assert td.config.get_soft_device_placement()


def test_variable_creator_scope_sees_and_changes_the_arguments():
    seen = []

    def not_trainable(next_creator, **kwargs):
        seen.append(kwargs["name"])
        kwargs["trainable"] = False
        return next_creator(**kwargs)

    def doubled(next_creator, **kwargs):
        kwargs["initial_value"] = kwargs["initial_value"] * 2
        return next_creator(**kwargs)

    with td.variable_creator_scope(not_trainable):
        with td.variable_creator_scope(doubled):
            v = td.Variable(3.0, name="v")
    assert seen == ["v"]
    assert v.numpy() == 6.0 and not v.trainable
    assert td.Variable(1.0).trainable  # the scopes are closed


def test_variable_creator_scope_can_replace_the_variable_and_works_while_tracing():
    made = []

    def recording(next_creator, **kwargs):
        var = next_creator(**kwargs)
        made.append(var)
        return var

    class Model(td.Module):
        def __init__(self):
            super().__init__()
            self.w = None

        @td.function
        def __call__(self, x):
            if self.w is None:
                with td.variable_creator_scope(recording):
                    self.w = td.Variable(2.0)
            return x * self.w

    m = Model()
    assert m(td.constant(3.0)).numpy() == 6.0
    assert len(made) == 1 and made[0] is m.w
    with pytest.raises(TypeError, match="constraint"):
        with td.variable_creator_scope(lambda nxt, **kw: nxt(**dict(kw, constraint=abs))):
            td.Variable(1.0)
    with pytest.raises(TypeError, match="callable"):
        td.variable_creator_scope(3)
