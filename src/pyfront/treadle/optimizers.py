"""td.optimizers: SGD (with momentum) and Adam, with Keras' update rules.

Slots (momentum, first and second moments) and the `iterations` counter are
td.Variables made at the first `apply_gradients` — inside a td.function that
is its first trace, where creating variables is allowed."""

from treadle.framework import context, dtypes
from treadle.framework.tensor import convert_to_tensor
from treadle.framework.variables import Variable
from treadle.ops import array_ops, math_ops


class Optimizer:
    def __init__(self, learning_rate, name):
        self.learning_rate = learning_rate
        self.name = name
        self._iterations = None
        self._slots = {}  # variable ref -> {slot name: Variable}

    @property
    def iterations(self):
        self._ensure_iterations()
        return self._iterations

    def _ensure_iterations(self):
        if self._iterations is None:
            with context.init_scope():
                self._iterations = Variable(0, dtype=dtypes.int64, trainable=False, name=f"{self.name}/iterations")

    def _slot(self, var, slot_name):
        slots = self._slots.setdefault(var.ref(), {})
        if slot_name not in slots:
            with context.init_scope():
                slots[slot_name] = Variable(array_ops.zeros_like(var.read_value()), trainable=False,
                                            name=f"{var._name}/{slot_name}")
        return slots[slot_name]

    def get_slot(self, var, slot_name):
        return self._slots[var.ref()][slot_name]

    def _lr(self, var):
        lr = self.learning_rate() if callable(self.learning_rate) else self.learning_rate
        # A Python number becomes the variable's dtype directly (no float32 rounding on the way).
        return math_ops.cast(convert_to_tensor(lr, dtype_hint=var.dtype), var.dtype)

    def apply_gradients(self, grads_and_vars):
        """Applies one update for each (gradient, variable); None gradients are skipped.
        Returns the iteration counter after the update."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        for g, v in pairs:
            if not isinstance(v, Variable):
                raise TypeError(f"{self.name}.apply_gradients expects td.Variables, got {v!r}")
        self._ensure_iterations()
        for g, v in pairs:
            for slot_name in self._slot_names():
                self._slot(v, slot_name)
        step = math_ops.cast(self._iterations.read_value() + 1, dtypes.float32)
        for g, v in pairs:
            g = convert_to_tensor(g, dtype=v.dtype)
            if g.shape.rank is not None and v.shape.rank is not None and g.shape != v.shape \
                    and g.shape.is_fully_defined() and v.shape.is_fully_defined():
                raise ValueError(f"gradient of shape {g.shape} does not match variable {v.name} of shape {v.shape}")
            self._update(g, v, step)
        return self._iterations.assign_add(1)

    def minimize(self, loss, var_list, tape):
        grads = tape.gradient(loss, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def _slot_names(self):
        return ()


class SGD(Optimizer):
    """w -= lr * g; with momentum m: v = m * v - lr * g; w += v (Nesterov: w += m * v - lr * g)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD"):
        super().__init__(learning_rate, name)
        if momentum < 0:
            raise ValueError(f"momentum must be >= 0, got {momentum}")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def _slot_names(self):
        return ("momentum",) if self.momentum else ()

    def _update(self, g, v, step):
        lr = self._lr(v)
        if not self.momentum:
            v.assign_sub(lr * g)
            return
        velocity = self.get_slot(v, "momentum")
        new_velocity = self.momentum * velocity.read_value() - lr * g
        velocity.assign(new_velocity)
        v.assign_add(self.momentum * new_velocity - lr * g if self.nesterov else new_velocity)


class Adam(Optimizer):
    """Adam with bias correction folded into the step size, as Keras does:
    lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t); w -= lr_t * m / (sqrt(v) + eps)."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name="Adam"):
        super().__init__(learning_rate, name)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def _slot_names(self):
        return ("m", "v")

    def _update(self, g, v, step):
        lr = self._lr(v)
        t = math_ops.cast(step, v.dtype)
        b1, b2 = self.beta_1, self.beta_2
        m = self.get_slot(v, "m")
        s = self.get_slot(v, "v")
        new_m = m.read_value() * b1 + g * (1.0 - b1)
        new_s = s.read_value() * b2 + (g * g) * (1.0 - b2)
        m.assign(new_m)
        s.assign(new_s)
        one = convert_to_tensor(1.0, dtype=v.dtype)
        lr_t = lr * math_ops.OPERATOR_FUNCTIONS["pow"](one - b2 ** t, 0.5) / (one - b1 ** t)
        v.assign_sub(lr_t * new_m / (math_ops.OPERATOR_FUNCTIONS["pow"](new_s, 0.5) + self.epsilon))


__all__ = ["Optimizer", "SGD", "Adam"]
