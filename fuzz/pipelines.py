"""The fuzz kind of td.data pipelines: an input is a small program, a source
byte and a length, then (op, argument) byte pairs, each a transformation
(map, filter, batch, padded_batch, unbatch, take, skip, repeat, shuffle,
prefetch, cache, take_while, interleave) over small int64 sources (range,
tensor slices, a Python generator). Mutations change, insert, delete and
duplicate op pairs.

The oracle is a reference interpreter of the same program over Python lists
(TensorFlow's documented semantics): the pipeline must yield the elements it
computes, exactly, or, where TensorFlow refuses the pipeline (batching
elements of different shapes, unbatching scalars), raise. With a shuffle,
the elements are compared as a multiset when only element-wise ops follow
it, and otherwise two iterations must agree (a fixed seed, no reshuffling).
Every element must match element_spec, and a known cardinality the count.
The supervisor (fuzz/run.py) counts the pipelines that hang or crash."""

import itertools

import numpy as np

import treadle as td

from fuzz.base import Kind, KnownFinding, Wrong
from fuzz.mutate import Mutator

MAX_ELEMENTS = 2000  # the reference refuses programs that could make more (so no input runs long)
OPS = ("map", "filter", "batch", "padded_batch", "unbatch", "take", "skip", "repeat", "shuffle", "prefetch",
       "cache", "take_while", "interleave")
ELEMENTWISE = {"map", "filter", "prefetch", "cache", "shuffle"}


class RefError(Exception):
    """The reference (TensorFlow) refuses the pipeline."""


def decode(data):
    """(source, n, [(op name, argument byte), ...]) of an input."""
    if len(data) < 2:
        return 0, 0, []
    ops = [(OPS[data[i] % len(OPS)], data[i + 1]) for i in range(2, len(data) - 1, 2)]
    return data[0] % 3, data[1] % 41, ops[:10]


def encode(source, n, ops):
    return bytes([source, n]) + b"".join(bytes([OPS.index(op), arg]) for op, arg in ops)


# ---------------------------------------------------------------- the reference

def _source_values(source, n):
    if source == 1:
        return [np.int64(3 * i - 5) for i in range(n)]
    return [np.int64(i) for i in range(n)]


def _batch(elements, k, drop, pad):
    group = []
    for e in itertools.chain(elements, [None]):
        if e is not None:
            group.append(e)
        if len(group) < k and (e is not None or not group or drop):
            continue
        shapes = {np.shape(x) for x in group}
        if len(shapes) > 1 and not pad:
            raise RefError("batching elements of different shapes")
        if pad:
            target = tuple(max(s[d] for s in shapes) for d in range(len(next(iter(shapes)))))
            group = [np.pad(x, [(0, t - n) for t, n in zip(target, np.shape(x))]) if np.ndim(x) else x
                     for x in group]
        yield np.stack(group).astype(np.int64)
        group = []


def _interleave(elements, cycle, block):
    """TensorFlow's interleave of range(sum(x) % 4) * 10 + sum(x): input read
    only when a slot of the cycle needs a new element."""
    inputs = iter(elements)
    slots, index, block_index, input_done = [None] * cycle, 0, 0, False
    while not input_done or any(s is not None for s in slots):
        if slots[index] is not None:
            try:
                value = next(slots[index])
            except StopIteration:
                slots[index] = None
                index, block_index = (index + 1) % cycle, 0
                continue
            yield value
            block_index += 1
            if block_index == block:
                index, block_index = (index + 1) % cycle, 0
        elif not input_done:
            try:
                x = int(np.sum(next(inputs)))
            except StopIteration:
                input_done = True
                continue
            slots[index] = iter([np.int64(i * 10 + x) for i in range(x % 4)])
        else:
            index, block_index = (index + 1) % cycle, 0


def _bound(ops, n):
    """An upper bound of the elements any stage makes."""
    total = biggest = n
    for op, arg in ops:
        if op == "repeat":
            total *= arg % 4
        elif op == "interleave":
            total *= 3
        elif op == "unbatch":
            total *= max(1, biggest)
        biggest = max(biggest, total)
    return biggest


def _stage(op, arg, upstream):
    """A function making the op's iterator over a fresh iterator of `upstream`
    (lazy, as TensorFlow's: an error is raised only when its element is pulled)."""
    if op == "map":
        return lambda: (e * 2 + 1 if arg % 2 else e % 7 for e in upstream())
    if op == "filter":
        return lambda: (e for e in upstream() if int(np.sum(e)) % 3 != arg % 3)
    if op in ("batch", "padded_batch"):
        return lambda: _batch(upstream(), arg % 5 + 1, arg >= 128, op == "padded_batch")
    if op == "unbatch":
        return lambda: (np.int64(v) if np.ndim(v) == 0 else v for e in upstream() for v in e)
    if op == "take":
        return lambda: itertools.islice(upstream(), arg % 8)
    if op == "skip":
        return lambda: itertools.islice(upstream(), arg % 8, None)
    if op == "repeat":
        return lambda: itertools.chain.from_iterable(upstream() for _ in range(arg % 4))
    if op == "take_while":
        return lambda: itertools.takewhile(lambda e: int(np.sum(e)) < arg % 40, upstream())
    if op == "interleave":
        return lambda: _interleave(upstream(), arg % 4 + 1, arg // 64 + 1)
    return upstream  # shuffle (compared apart), prefetch, cache


def reference(source, n, ops):
    """The elements TensorFlow yields, or RefError."""
    if _bound(ops, n) > MAX_ELEMENTS:
        raise RefError("too large for the harness")  # never built
    values = _source_values(source, n)
    make = lambda: iter(values)  # noqa: E731
    for op, arg in ops:
        make = _stage(op, arg, make)
    return list(make())


def static_ranks(ops):
    """RefError where an op needs a rank the elements do not have (TensorFlow
    refuses the pipeline as it is built)."""
    rank = 0
    for op, _ in ops:
        if op in ("batch", "padded_batch"):
            rank += 1
        elif op == "unbatch":
            if rank == 0:
                raise RefError("unbatch of scalars")
            rank -= 1
        elif op == "interleave":
            rank = 0  # its elements are those of the datasets it makes: scalars
    return rank


# ---------------------------------------------------------------- treadle

def _map(odd):
    return (lambda x: x * 2 + 1) if odd else (lambda x: x % 7)


def build(source, n, ops):
    if source == 0:
        ds = td.data.Dataset.range(n)
    elif source == 1:
        ds = td.data.Dataset.from_tensor_slices(np.array(_source_values(1, n), np.int64).reshape(n))
    else:
        ds = td.data.Dataset.from_generator(lambda: iter(range(n)),
                                            output_signature=td.TensorSpec([], td.int64))
    for op, arg in ops:
        if op == "map":
            ds = ds.map(_map(arg % 2))
        elif op == "filter":
            ds = ds.filter(lambda x, r=arg % 3: td.not_equal(td.reduce_sum(x) % 3, r))
        elif op == "batch":
            ds = ds.batch(arg % 5 + 1, drop_remainder=arg >= 128)
        elif op == "padded_batch":
            ds = ds.padded_batch(arg % 5 + 1, drop_remainder=arg >= 128)
        elif op == "unbatch":
            ds = ds.unbatch()
        elif op == "take":
            ds = ds.take(arg % 8)
        elif op == "skip":
            ds = ds.skip(arg % 8)
        elif op == "repeat":
            ds = ds.repeat(arg % 4)
        elif op == "shuffle":
            ds = ds.shuffle(arg % 6 + 1, seed=arg, reshuffle_each_iteration=False)
        elif op == "prefetch":
            ds = ds.prefetch(arg % 3 + 1)
        elif op == "cache":
            ds = ds.cache()
        elif op == "take_while":
            ds = ds.take_while(lambda x, c=arg % 40: td.reduce_sum(x) < c)
        elif op == "interleave":
            ds = ds.interleave(lambda x: td.data.Dataset.range(td.reduce_sum(x) % 4).map(
                lambda i, s=td.reduce_sum(x): i * 10 + s), cycle_length=arg % 4 + 1, block_length=arg // 64 + 1)
    return ds


def _check_spec(ds, elements):
    spec = ds.element_spec
    for e in elements:
        if e.dtype != np.int64 or not spec.shape.is_compatible_with(e.shape):
            raise Wrong(f"element {e.dtype} {e.shape} does not match {spec}")
    n = int(ds.cardinality().numpy())
    if n >= 0 and n != len(elements):
        raise Wrong(f"cardinality {n}, {len(elements)} elements")


def _same(a, b):
    return len(a) == len(b) and all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(a, b))


def _multiset(elements):
    return sorted((e.shape, e.tobytes()) for e in elements)


class PipelineKind(Kind):
    name = "data_pipeline"
    seconds_share = 0.5  # half the CI run's time of the other kinds

    def seeds(self):
        return [encode(0, 10, [("map", 1), ("batch", 3), ("unbatch", 0), ("take", 6)]),
                encode(1, 12, [("filter", 1), ("shuffle", 4), ("batch", 130), ("prefetch", 1)]),
                encode(2, 7, [("repeat", 2), ("padded_batch", 3), ("cache", 0), ("skip", 1)]),
                encode(0, 9, [("interleave", 66), ("take_while", 30), ("map", 0)]),
                encode(0, 3, [("interleave", 1), ("batch", 2)]),
                encode(2, 5, [("prefetch", 2), ("map", 1), ("repeat", 3), ("take", 7)])]

    def mutate(self, rng, data):
        b = bytearray(data[:2] if len(data) >= 2 else b"\x00\x05")
        ops = [bytes(data[i:i + 2]) for i in range(2, len(data) - 1, 2)]
        for _ in range(rng.choice([1, 1, 2, 3])):
            r = rng.random()
            if r < 0.15:
                b[rng.randrange(2)] = rng.randrange(256)
            elif r < 0.45 or not ops:
                ops.insert(rng.randrange(len(ops) + 1), bytes([rng.randrange(len(OPS)), rng.randrange(256)]))
            elif r < 0.6:
                del ops[rng.randrange(len(ops))]
            elif r < 0.8:
                i = rng.randrange(len(ops))
                ops[i] = bytes([ops[i][0], rng.randrange(256)])
            elif r < 0.9:
                ops.insert(rng.randrange(len(ops) + 1), ops[rng.randrange(len(ops))])
            else:
                i, j = rng.randrange(len(ops)), rng.randrange(len(ops))
                ops[i], ops[j] = ops[j], ops[i]
        out = bytes(b) + b"".join(ops)
        return Mutator(rng).damage(out) if rng.random() < 0.02 else out

    def consume(self, data):
        source, n, ops = decode(data)
        try:
            static_ranks(ops)
            want = reference(source, n, ops)
        except RefError as e:
            if str(e) == "too large for the harness":
                return
            want = e
        except Exception as e:  # noqa: BLE001 - the harness's own failure must not pass for a rejection
            raise AssertionError(f"the reference interpreter failed: {type(e).__name__}: {e}") from None
        try:
            ds = build(source, n, ops)
            got = [np.asarray(e) for e in ds.as_numpy_iterator()]
        except (td.errors.OpError, ValueError, TypeError) as e:
            if isinstance(want, RefError) or any(op == "shuffle" for op, _ in ops):
                raise
            if "the element_spec is not known" in str(e) and "input dataset is empty" in str(e):
                # interleave over an empty input, whose map_func needs concrete values (fuzz/known/README.md)
                raise KnownFinding(f"interleave over an empty dataset refused: {e}") from None
            raise Wrong(f"refused a pipeline TensorFlow runs ({type(e).__name__}: {e})") from None
        if isinstance(want, RefError):
            if any(op == "shuffle" for op, _ in ops):
                return  # a shuffle reads ahead: whether TensorFlow meets the error depends on its buffer
            raise Wrong(f"ran a pipeline TensorFlow refuses ({want})")
        _check_spec(ds, got)
        shuffles = [i for i, (op, _) in enumerate(ops) if op == "shuffle"]
        if not shuffles:
            if not _same(got, want):
                raise Wrong(f"{len(got)} elements differ from the reference's {len(want)}")
        elif all(op in ELEMENTWISE for op, _ in ops[shuffles[0]:]):
            if _multiset(got) != _multiset(want):
                raise Wrong("the shuffled elements differ from the reference's")
        again = [np.asarray(e) for e in ds.as_numpy_iterator()]
        if not _same(got, again):
            raise Wrong("two iterations of the pipeline differ")
