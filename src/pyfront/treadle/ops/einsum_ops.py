"""td.einsum, built from transposes, reshapes, sums and batched matmuls (so
its gradient comes from theirs). Supported: any number of operands, explicit
or implicit ("ij,jk") output, letters summed out; not supported: ellipsis
("...") broadcasting and repeated letters within one operand (diagonals)."""

import string

from treadle.framework.tensor import convert_to_tensor
from treadle.ops import array_ops, math_ops


def _parse(equation, count):
    eq = equation.replace(" ", "")
    if "." in eq:
        raise NotImplementedError("td.einsum: ellipsis ('...') broadcasting is not supported")
    if "->" in eq:
        inputs, output = eq.split("->")
    else:
        inputs = eq
        letters = inputs.replace(",", "")
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = inputs.split(",")
    if len(terms) != count:
        raise ValueError(f"td.einsum: the equation has {len(terms)} operands but {count} tensors were given")
    for t in terms + [output]:
        if any(c not in string.ascii_letters for c in t):
            raise ValueError(f"td.einsum: invalid subscripts {t!r} in {equation!r}")
        if len(set(t)) != len(t):
            raise NotImplementedError(f"td.einsum: repeated subscripts in one operand ({t!r}) are not supported")
    for c in output:
        if not any(c in t for t in terms):
            raise ValueError(f"td.einsum: output subscript {c!r} appears in no input")
    return terms, output


class _Operand:
    def __init__(self, tensor, letters):
        self.tensor = tensor
        self.letters = letters
        if tensor.shape.rank is not None and tensor.shape.rank != len(letters):
            raise ValueError(f"td.einsum: operand of shape {tensor.shape} has {len(letters)} subscripts "
                             f"{letters!r}")

    def dims(self, letters):
        """The sizes of `letters` (an int32 vector; a constant when known)."""
        static = self.tensor.shape.as_list() if self.tensor.shape.rank is not None else None
        pos = [self.letters.index(c) for c in letters]
        if static is not None and all(static[p] is not None for p in pos):
            return [static[p] for p in pos]
        shape = array_ops.shape(self.tensor)
        return array_ops.gather(shape, pos) if pos else []

    def transposed(self, letters):
        if letters == self.letters:
            return self.tensor
        return array_ops.transpose(self.tensor, [self.letters.index(c) for c in letters])

    def sum_out(self, keep):
        drop = [i for i, c in enumerate(self.letters) if c not in keep]
        if drop:
            self.tensor = math_ops.reduce_sum(self.tensor, axis=drop)
            self.letters = "".join(c for c in self.letters if c in keep)


def _size(dims):
    if isinstance(dims, list):
        out = 1
        for d in dims:
            out *= d
        return [out]
    return math_ops.reduce_prod(dims, keepdims=True)


def _concat(*parts):
    if all(isinstance(p, list) for p in parts):
        return [d for p in parts for d in p]
    return array_ops.concat([p if not isinstance(p, list) else convert_to_tensor(p, dtype_hint=None)
                             for p in parts if not (isinstance(p, list) and not p)], 0)


def _contract(a, b, needed):
    """a and b contracted over their shared letters not in `needed`."""
    batch = [c for c in a.letters if c in b.letters and c in needed]
    summed = [c for c in a.letters if c in b.letters and c not in needed]
    free_a = [c for c in a.letters if c not in b.letters]
    free_b = [c for c in b.letters if c not in a.letters]
    at = array_ops.reshape(a.transposed("".join(batch + free_a + summed)),
                           _concat(_size(a.dims(batch)), _size(a.dims(free_a)), _size(a.dims(summed))))
    bt = array_ops.reshape(b.transposed("".join(batch + summed + free_b)),
                           _concat(_size(b.dims(batch)), _size(b.dims(summed)), _size(b.dims(free_b))))
    product = math_ops.matmul(at, bt)
    shape = _concat(a.dims(batch), a.dims(free_a), b.dims(free_b))
    return _Operand(array_ops.reshape(product, shape), "".join(batch + free_a + free_b))


def einsum(equation, *inputs, name=None, **kwargs):
    """Sums of products of the inputs' elements, as an Einstein-summation equation says ("ij,jk->ik")."""
    tensors = [convert_to_tensor(t) for t in inputs]
    terms, output = _parse(equation, len(tensors))
    operands = [_Operand(t, letters) for t, letters in zip(tensors, terms)]
    # Letters only one operand has and the output lacks are summed out first.
    for i, op in enumerate(operands):
        others = "".join(o.letters for j, o in enumerate(operands) if j != i)
        op.sum_out(set(output) | set(others))
    result = operands[0]
    for k, op in enumerate(operands[1:], start=1):
        needed = set(output) | set("".join(o.letters for o in operands[k + 1:]))
        result = _contract(result, op, needed)
    result.sum_out(set(output))
    out = result.transposed(output)
    return out if name is None else array_ops.identity(out, name=name)


PUBLIC = {"": ["einsum"], "linalg": ["einsum"]}
