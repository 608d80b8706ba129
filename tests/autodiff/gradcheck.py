"""Finite-difference checks of gradients (central differences in float64).

A function under test takes td tensors (one per input array) and returns a
tensor or a list of tensors; it is reduced to a scalar with fixed random
weights, L(x) = sum_k sum(w_k * f(x)_k). Its gradient (GradientTape) is
compared with central differences of L; its second derivative (nested tapes)
with central differences of the first-order gradient projected on a random
direction. Each check runs eagerly, or inside one td.function."""

import numpy as np

import treadle as td


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _dense(g):
    """A gradient as a tensor: td.IndexedSlices (a gather's gradient) densified."""
    return td.convert_to_tensor(g) if isinstance(g, td.IndexedSlices) else g


def _array(g):
    return np.asarray(_dense(g))


class GradCheck:
    def __init__(self, fn, inputs, seed=0, eps=1e-6, rtol=1e-5, atol=1e-7):
        self.fn = fn
        self.inputs = [np.asarray(a) for a in inputs]
        self.diff = [i for i, a in enumerate(self.inputs) if a.dtype == np.float64]
        self.eps, self.rtol, self.atol = eps, rtol, atol
        rng = np.random.default_rng(seed)
        outs = [np.asarray(o) for o in _as_list(fn(*[td.constant(a) for a in self.inputs]))]
        self.weights = [rng.uniform(-1, 1, size=o.shape) for o in outs]
        self.direction = [rng.uniform(-1, 1, size=self.inputs[i].shape) for i in self.diff]

    # ---------------------------------------------------------- the computations
    def _loss(self, tensors):
        outs = _as_list(self.fn(*tensors))
        total = None
        for o, w in zip(outs, self.weights):
            if o.dtype != td.float64:
                o = td.cast(o, td.float64)
            term = td.reduce_sum(o * td.constant(w))
            total = term if total is None else total + term
        return total

    def _first(self, tensors):
        sources = [tensors[i] for i in self.diff]
        with td.GradientTape() as tape:
            tape.watch(sources)
            loss = self._loss(tensors)
        return tape.gradient(loss, sources)

    def _second(self, tensors):
        """Gradient of sum_i <grad_i L, v_i> with nested tapes."""
        sources = [tensors[i] for i in self.diff]
        with td.GradientTape() as outer:
            outer.watch(sources)
            grads = self._first(tensors)
            total = None
            for g, v in zip(grads, self.direction):
                if g is None:
                    continue
                term = td.reduce_sum(_dense(g) * td.constant(v))
                total = term if total is None else total + term
        if total is None:
            return [None] * len(sources)
        return outer.gradient(total, sources)

    def _run(self, which, arrays, in_function):
        compute = self._first if which == 1 else self._second
        tensors = [td.constant(a) for a in arrays]
        if in_function in ("unknown_dims", "unknown_rank"):
            specs = relaxed_specs(tensors, in_function)
            return td.function(fixed_arity(compute, len(tensors)), input_signature=specs, autograph=False)(*tensors)
        if in_function:
            return td.function(lambda *ts: compute(list(ts)), autograph=False)(*tensors)
        return compute(tensors)

    # ---------------------------------------------------------- numeric references
    def _numeric(self, scalar_fn, arrays):
        """Central differences of scalar_fn(arrays) w.r.t. each float input."""
        out = []
        for i in self.diff:
            g = np.zeros(arrays[i].shape)
            for idx in np.ndindex(arrays[i].shape):
                plus = [a.copy() for a in arrays]
                minus = [a.copy() for a in arrays]
                plus[i][idx] += self.eps
                minus[i][idx] -= self.eps
                g[idx] = (scalar_fn(plus) - scalar_fn(minus)) / (2 * self.eps)
            out.append(g)
        return out

    def _loss_value(self, arrays):
        return float(self._loss([td.constant(a) for a in arrays]).numpy())

    def _first_projection(self, arrays):
        grads = self._run(1, arrays, in_function=False)
        return sum(float(np.sum(_array(g) * v)) for g, v in zip(grads, self.direction) if g is not None)

    # ---------------------------------------------------------- checks
    def _compare(self, got, want, what):
        for k, (g, w) in enumerate(zip(got, want)):
            if g is None:
                assert np.allclose(w, 0, atol=self.atol * 10 + 1e-6), f"{what}: input {self.diff[k]} got None, " \
                                                                       f"numeric {w}"
                continue
            g = _array(g)
            assert g.shape == w.shape, f"{what}: input {self.diff[k]}: shape {g.shape} vs {w.shape}"
            np.testing.assert_allclose(g, w, rtol=self.rtol, atol=self.atol,
                                       err_msg=f"{what}: input {self.diff[k]}")

    def check_first(self, in_function=False):
        got = self._run(1, self.inputs, in_function)
        self._compare(got, self._numeric(self._loss_value, self.inputs), "first order")
        return got

    def check_second(self, in_function=False):
        got = self._run(2, self.inputs, in_function)
        self._compare(got, self._numeric(self._first_projection, self.inputs), "second order")
        return got


def relaxed_specs(tensors, how):
    """TensorSpecs hiding the static shapes: every dimension unknown, or the rank too."""
    return [td.TensorSpec(None if how == "unknown_rank" else [None] * t.ndim, t.dtype) for t in tensors]


def fixed_arity(compute, n):
    """A function of n positional tensors calling compute(list of them) (input_signature needs named parameters)."""
    names = ", ".join(f"a{i}" for i in range(n))
    return eval(f"lambda {names}: compute([{names}])", {"compute": compute})  # noqa: S307 (test helper)


def forward_traces_with(fn, inputs, how):
    """Whether fn's forward computation can be traced with relaxed input shapes."""
    tensors = [td.constant(np.asarray(a)) for a in inputs]
    try:
        td.function(fixed_arity(lambda ts: fn(*ts), len(tensors)), input_signature=relaxed_specs(tensors, how),
                    autograph=False).get_concrete_function()
    except (ValueError, TypeError, NotImplementedError):
        return False
    return True


def traced_op_types(fn, inputs):
    """The op types a td.function of fn's gradient computation contains
    (forward and backward), library functions included."""
    check = GradCheck(fn, inputs)
    tensors = [td.constant(a) for a in check.inputs]
    concrete = td.function(lambda *ts: check._first(list(ts)), autograph=False).get_concrete_function(*tensors)
    types = set()
    graphs = [concrete.graph]
    seen = set()
    while graphs:
        g = graphs.pop()
        if id(g) in seen:
            continue
        seen.add(id(g))
        types.update(op.type for op in g.operations)
        graphs.extend(f.graph for f in g.functions.values())
    return types
