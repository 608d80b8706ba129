"""td.train.Checkpoint: variables, modules, optimizer slots and generators
saved and restored (issue 17), as TensorFlow's tf.train.Checkpoint does."""

import numpy as np
import pytest

import treadle as td


class Dense(td.Module):
    def __init__(self):
        super().__init__()
        self.w = td.Variable(np.ones((2, 2), np.float32))
        self.b = td.Variable(np.zeros(2, np.float32))

    def __call__(self, x):
        return x @ self.w + self.b


def _train(model, opt, steps):
    x = td.constant([[1.0, 2.0]])
    for _ in range(steps):
        with td.GradientTape() as tape:
            loss = td.reduce_sum(model(x) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, [model.w, model.b]), [model.w, model.b]))


def test_checkpoint_restores_model_and_optimizer_slots(tmp_path):
    model, opt = Dense(), td.optimizers.Adam(0.1)
    _train(model, opt, 3)
    ckpt = td.train.Checkpoint(model=model, optimizer=opt)
    path = ckpt.save(str(tmp_path / "ckpt"))
    m_at_save = opt.get_slot(model.w, "m").numpy().copy()
    assert path.endswith("ckpt-1") and td.train.latest_checkpoint(str(tmp_path)) == path
    _train(model, opt, 2)
    expected_w = model.w.numpy().copy()  # after 5 steps

    # A fresh model and optimizer, restored, then trained for the 2 remaining steps, end where the first did.
    model2, opt2 = Dense(), td.optimizers.Adam(0.1)
    status = td.train.Checkpoint(model=model2, optimizer=opt2).restore(path)
    status.assert_consumed()
    assert int(opt2.iterations.numpy()) == 3
    np.testing.assert_array_equal(opt2.get_slot(model2.w, "m").numpy(), m_at_save)
    _train(model2, opt2, 2)
    np.testing.assert_allclose(model2.w.numpy(), expected_w, rtol=1e-6)


def test_checkpoint_of_variables_lists_and_generators(tmp_path):
    v = td.Variable(3.0)
    vs = [td.Variable([1, 2]), {"k": td.Variable(True)}]
    gen = td.random.Generator.from_seed(7)
    ckpt = td.train.Checkpoint(v=v, vs=vs, gen=gen)
    path = ckpt.write(str(tmp_path / "one"))
    first = gen.normal([3]).numpy()
    v.assign(0.0)
    vs[0].assign([0, 0])
    vs[1]["k"].assign(False)
    ckpt.restore(path).assert_consumed()
    assert v.numpy() == 3.0 and vs[0].numpy().tolist() == [1, 2] and bool(vs[1]["k"].numpy())
    np.testing.assert_array_equal(gen.normal([3]).numpy(), first)  # the generator's state came back

    other = td.train.Checkpoint(v=td.Variable(np.zeros(2, np.float32)))
    with pytest.raises(ValueError, match="shape"):
        other.restore(path)
    status = td.train.Checkpoint(v=td.Variable(1.0)).restore(path)
    with pytest.raises(AssertionError, match="saved but not restored"):
        status.assert_consumed()
    status.expect_partial()
    bad = tmp_path / "bad"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(td.errors.DataLossError):
        ckpt.restore(str(bad))
