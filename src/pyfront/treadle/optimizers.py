"""td.optimizers: SGD (with momentum and Nesterov), Adam, AdamW, Adagrad and
RMSprop, as TensorFlow's Keras optimizers compute them (also reachable as
td.keras.optimizers; a learning rate may be a schedule of
td.keras.optimizers.schedules).

`apply_gradients(zip(grads, variables))` updates the variables with ops, so
it runs eagerly or inside a td.function (a whole training step as one
graph). Slot variables (momentum, Adam's moments) are made once, at the
first apply for each variable; inside a td.function that is the first trace,
where td.function allows creating variables.

A td.IndexedSlices gradient (a gather's, a loom batch input's) is applied as
Keras applies one: the rows it names are updated with ResourceScatterAdd/Sub
(duplicate indices add up), and the decays of momentum and Adam's moments
stay dense. For SGD (with or without momentum) that equals the dense update
with `convert_to_tensor(grad)`; for Adam it does when the indices are unique
(with duplicates, v gets the sum of the squares of the slices rather than
the square of their sum, as in TensorFlow)."""

import inspect

from treadle.autodiff.tape import GradientTape
from treadle.framework import context, distribution_context, dtypes
from treadle.framework.indexed_slices import IndexedSlices, densify
from treadle.framework.op_execution import execute
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework.variables import Variable


def _run(op_name, inputs, attrs=None):
    return execute(op_name, inputs, attrs)[0]


_CONSTANTS = {}


def _constant(value, dtype):
    """A scalar constant: made once in eager mode (an update step runs many
    times), a Const node of the graph while tracing."""
    if context.current_graph() is not None:
        return convert_to_tensor(value, dtype=dtype)
    key = (value, dtype)
    t = _CONSTANTS.get(key)
    if t is None:
        if len(_CONSTANTS) > 1024:
            _CONSTANTS.clear()
        t = _CONSTANTS[key] = convert_to_tensor(value, dtype=dtype)
    return t


class Optimizer:
    """The common part: the step counter, slots, and the apply loop."""

    def __init__(self, learning_rate, name):
        self._learning_rate = learning_rate
        self.name = name
        self._iterations = None
        self._slots = {}          # (slot name, variable id) -> Variable
        self._slot_order = []
        self._built_for = set()   # ids of the variables whose slots exist

    # ---------------------------------------------------------- state
    @property
    def iterations(self):
        """The number of apply_gradients calls made (an int64 variable)."""
        if self._iterations is None:
            with context.init_scope():
                self._iterations = Variable(0, dtype=dtypes.int64, trainable=False, name=f"{self.name}/iterations")
        return self._iterations

    @property
    def learning_rate(self):
        """The learning rate: a number, a variable, or a schedule (a callable of the step, such as
        `td.keras.optimizers.schedules.ExponentialDecay`); assignable."""
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self._learning_rate = value

    @property
    def variables(self):
        """The optimizer's own variables: the step counter, then the slots."""
        return ([self._iterations] if self._iterations is not None else []) + list(self._slot_order)

    def add_slot(self, variable, slot_name):
        """A variable of `variable`'s shape and dtype, initially zeros (made once)."""
        key = (slot_name, variable._unique_id)
        slot = self._slots.get(key)
        if slot is None:
            with context.init_scope():
                initial = _run("ZerosLike", [variable.read_value()])
                slot = Variable(initial, trainable=False, name=f"{self.name}/{variable._name}/{slot_name}",
                                shape=variable.shape)
            self._slots[key] = slot
            self._slot_order.append(slot)
        return slot

    def get_slot(self, variable, slot_name):
        """The slot variable `slot_name` (such as 'm' or 'v' for Adam) the optimizer keeps for `variable`;
        `KeyError` if it has none yet."""
        return self._slots[(slot_name, variable._unique_id)]

    def _current_learning_rate(self, dtype):
        lr = self._learning_rate
        if callable(lr):
            # A schedule takes the step (Keras' LearningRateSchedule); a plain
            # callable takes nothing.
            lr = lr(self.iterations) if _takes_argument(lr) else lr()
        if isinstance(lr, Tensor):
            return lr if lr.dtype == dtype else _run("Cast", [lr], {"DstT": dtype})
        return _constant(float(lr), dtype)

    # ---------------------------------------------------------- applying
    def apply_gradients(self, grads_and_vars, name=None):
        """Applies one update step to each variable with a gradient (pairs with a
        None gradient are skipped, as in TensorFlow), then counts the step."""
        pairs = []
        for grad, var in grads_and_vars:
            if not isinstance(var, Variable):
                raise TypeError(f"{self.name}.apply_gradients expects td.Variables, got {var!r}")
            if grad is None:
                continue
            if not isinstance(grad, IndexedSlices):
                grad = convert_to_tensor(grad)
            if grad.dtype != var.dtype:
                raise TypeError(f"gradient of dtype {grad.dtype.name} for variable {var.name} of dtype "
                                f"{var.dtype.name}")
            pairs.append((grad, var))
        replica = distribution_context.replica_context()
        if replica is not None:
            # Under td.distribute: the gradients summed over the replicas,
            # applied once to each copy of the variables.
            return replica.apply_gradients(pairs, self._apply_pairs)
        return self._apply_pairs(pairs)

    def _apply_pairs(self, pairs):
        """Builds missing slots, updates each variable, then counts the step."""
        iterations = self.iterations
        for _, var in pairs:
            if var._unique_id not in self._built_for:
                self._build_slots(var)
                self._built_for.add(var._unique_id)
        for grad, var in pairs:
            if isinstance(grad, IndexedSlices):
                self._update_sparse(grad, var)
            else:
                self._update(grad, var)
        iterations.assign_add(_constant(1, dtypes.int64))
        return iterations

    def minimize(self, loss, var_list, tape=None):
        """Computes the gradients of `loss` (a tensor recorded by `tape`, or a
        callable) with respect to `var_list` and applies them."""
        if callable(loss):
            with GradientTape() as tape:
                loss_value = loss()
        else:
            if tape is None:
                raise ValueError("`tape` is required when a `Tensor` loss is passed.")
            loss_value = loss
        var_list = list(var_list() if callable(var_list) else var_list)
        grads = tape.gradient(loss_value, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def _build_slots(self, var):
        pass

    def _update(self, grad, var):
        raise NotImplementedError

    def _update_sparse(self, grad, var):
        """The update for an IndexedSlices gradient (by default: densified)."""
        self._update(densify(grad), var)

    def __repr__(self):
        return f"<td.optimizers.{type(self).__name__} learning_rate={self._learning_rate!r}>"


class SGD(Optimizer):
    """Gradient descent, with momentum if momentum > 0:
    velocity = momentum * velocity - learning_rate * grad; var += velocity
    (nesterov: var += momentum * velocity - learning_rate * grad)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD"):
        super().__init__(learning_rate, name)
        if not 0.0 <= float(momentum) <= 1.0:
            raise ValueError("`momentum` must be a float between [0, 1].")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def _build_slots(self, var):
        if self.momentum > 0:
            self.add_slot(var, "momentum")

    def _update(self, grad, var):
        lr = self._current_learning_rate(var.dtype)
        if self.momentum == 0:
            var.assign_sub(_run("Mul", [grad, lr]))
            return
        m = self.get_slot(var, "momentum")
        momentum = _constant(self.momentum, var.dtype)
        step = _run("Mul", [grad, lr])
        velocity = _run("Sub", [_run("Mul", [m.read_value(), momentum]), step])
        m.assign(velocity)
        if self.nesterov:
            var.assign_add(_run("Sub", [_run("Mul", [velocity, momentum]), step]))
        else:
            var.assign_add(velocity)

    def _update_sparse(self, grad, var):
        # step = lr * grad as slices; momentum decays densely, then takes the step.
        lr = self._current_learning_rate(var.dtype)
        step = IndexedSlices(_run("Mul", [grad.values, lr]), grad.indices, grad.dense_shape)
        if self.momentum == 0:
            var.scatter_sub(step)
            return
        m = self.get_slot(var, "momentum")
        momentum = _constant(self.momentum, var.dtype)
        m.assign(_run("Mul", [m.read_value(), momentum]))
        m.scatter_sub(step)
        if self.nesterov:
            var.scatter_sub(step)
            var.assign_add(_run("Mul", [m.read_value(), momentum]))
        else:
            var.assign_add(m.read_value())


class Adam(Optimizer):
    """Adam (Kingma and Ba), with TensorFlow's bias correction folded into the
    step size: with t = iterations + 1,
    m += (grad - m) * (1 - beta_1); v += (grad**2 - v) * (1 - beta_2);
    var -= learning_rate * sqrt(1 - beta_2**t) / (1 - beta_1**t) * m / (sqrt(v) + epsilon)."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False, name="Adam"):
        super().__init__(learning_rate, name)
        if amsgrad:
            raise NotImplementedError("Adam(amsgrad=True) is not supported")
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def _build_slots(self, var):
        self.add_slot(var, "m")
        self.add_slot(var, "v")

    def _step_size(self, dt):
        """learning_rate * sqrt(1 - beta_2**t) / (1 - beta_1**t), t = iterations + 1."""
        lr = self._current_learning_rate(dt)
        step = _run("Cast", [_run("AddV2", [self.iterations.read_value(), _constant(1, dtypes.int64)])],
                    {"DstT": dt})
        one = _constant(1.0, dt)
        beta_1, beta_2 = _constant(self.beta_1, dt), _constant(self.beta_2, dt)
        bias_1 = _run("Sub", [one, _run("Pow", [beta_1, step])])
        bias_2 = _run("Sub", [one, _run("Pow", [beta_2, step])])
        return _run("RealDiv", [_run("Mul", [lr, _run("Sqrt", [bias_2])]), bias_1])

    def _apply_moments(self, var, m_new, v_new, alpha):
        denom = _run("AddV2", [_run("Sqrt", [v_new]), _constant(self.epsilon, var.dtype)])
        var.assign_sub(_run("RealDiv", [_run("Mul", [m_new, alpha]), denom]))

    def _update(self, grad, var):
        dt = var.dtype
        alpha = self._step_size(dt)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_old, v_old = m.read_value(), v.read_value()
        m_new = _run("AddV2", [m_old, _run("Mul", [_run("Sub", [grad, m_old]),
                                                  _constant(1 - self.beta_1, dt)])])
        v_new = _run("AddV2", [v_old, _run("Mul", [_run("Sub", [_run("Square", [grad]), v_old]),
                                                  _constant(1 - self.beta_2, dt)])])
        m.assign(m_new)
        v.assign(v_new)
        self._apply_moments(var, m_new, v_new, alpha)

    def _update_sparse(self, grad, var):
        # Keras' sparse Adam: m -= m * (1 - beta_1), then m[indices] += values * (1 - beta_1);
        # v likewise with values**2; the variable's update is dense.
        dt = var.dtype
        alpha = self._step_size(dt)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        for slot, beta, values in ((m, self.beta_1, grad.values), (v, self.beta_2, _run("Square", [grad.values]))):
            rate = _constant(1 - beta, dt)
            slot.assign_sub(_run("Mul", [slot.read_value(), rate]))
            slot.scatter_add(IndexedSlices(_run("Mul", [values, rate]), grad.indices, grad.dense_shape))
        self._apply_moments(var, m.read_value(), v.read_value(), alpha)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter), as Keras
    computes it: each step first shrinks the variable,
    var -= var * weight_decay * learning_rate, then applies Adam's update."""

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="AdamW"):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, name)
        if weight_decay is None or float(weight_decay) < 0:
            raise ValueError(f"AdamW: weight_decay must be a number >= 0, got {weight_decay!r}")
        self.weight_decay = float(weight_decay)

    def _decay(self, var):
        if self.weight_decay:
            rate = _run("Mul", [self._current_learning_rate(var.dtype), _constant(self.weight_decay, var.dtype)])
            var.assign_sub(_run("Mul", [var.read_value(), rate]))

    def _update(self, grad, var):
        self._decay(var)
        super()._update(grad, var)

    def _update_sparse(self, grad, var):
        self._decay(var)
        super()._update_sparse(grad, var)


class Adagrad(Optimizer):
    """Adagrad, as Keras computes it: accumulator += grad**2 (the accumulator
    starts at initial_accumulator_value);
    var -= learning_rate * grad / sqrt(accumulator + epsilon)."""

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, name="Adagrad"):
        super().__init__(learning_rate, name)
        if float(initial_accumulator_value) < 0:
            raise ValueError(f"Adagrad: initial_accumulator_value must be >= 0, got {initial_accumulator_value!r}")
        self.initial_accumulator_value, self.epsilon = float(initial_accumulator_value), float(epsilon)

    def _build_slots(self, var):
        slot = self.add_slot(var, "accumulator")
        with context.init_scope():  # once, when the slot is made (also when that is inside a trace)
            slot.assign(_run("AddV2", [slot.read_value(), convert_to_tensor(self.initial_accumulator_value,
                                                                            dtype=var.dtype)]))

    def _update(self, grad, var):
        acc = self.get_slot(var, "accumulator")
        acc.assign_add(_run("Square", [grad]))
        denom = _run("Sqrt", [_run("AddV2", [acc.read_value(), _constant(self.epsilon, var.dtype)])])
        var.assign_sub(_run("RealDiv", [_run("Mul", [grad, self._current_learning_rate(var.dtype)]), denom]))


class RMSprop(Optimizer):
    """RMSprop, as Keras computes it: v = rho * v + (1 - rho) * grad**2; when
    centered, also mg = rho * mg + (1 - rho) * grad and the denominator is
    v - mg**2; step = learning_rate * grad / sqrt(denominator + epsilon); with
    momentum, m = momentum * m + step and var -= m, otherwise var -= step."""

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, name="RMSprop"):
        super().__init__(learning_rate, name)
        if not 0.0 <= float(rho) <= 1.0 or not 0.0 <= float(momentum) <= 1.0:
            raise ValueError(f"RMSprop: rho and momentum must be in [0, 1], got {rho!r} and {momentum!r}")
        self.rho, self.momentum, self.epsilon, self.centered = float(rho), float(momentum), float(epsilon), bool(centered)

    def _build_slots(self, var):
        self.add_slot(var, "velocity")
        if self.momentum > 0:
            self.add_slot(var, "momentum")
        if self.centered:
            self.add_slot(var, "average_gradient")

    def _moving_average(self, slot, value, dt):
        rho = _constant(self.rho, dt)
        slot.assign(_run("AddV2", [_run("Mul", [slot.read_value(), rho]),
                                   _run("Mul", [value, _constant(1.0 - self.rho, dt)])]))
        return slot.read_value()

    def _update(self, grad, var):
        dt = var.dtype
        denom = self._moving_average(self.get_slot(var, "velocity"), _run("Square", [grad]), dt)
        if self.centered:
            mean = self._moving_average(self.get_slot(var, "average_gradient"), grad, dt)
            denom = _run("Sub", [denom, _run("Square", [mean])])
        step = _run("RealDiv", [_run("Mul", [grad, self._current_learning_rate(dt)]),
                                _run("Sqrt", [_run("AddV2", [denom, _constant(self.epsilon, dt)])])])
        if self.momentum > 0:
            m = self.get_slot(var, "momentum")
            m.assign(_run("AddV2", [_run("Mul", [m.read_value(), _constant(self.momentum, dt)]), step]))
            step = m.read_value()
        var.assign_sub(step)


def _takes_argument(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params)


__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "RMSprop"]


def __dir__():
    return sorted(__all__)
