"""Placeholders for symbols that have no value yet, and the single return of
a converted function."""

from treadle.autograph.operators import errors


class _UseOfUndefined(UnboundLocalError):
    pass


def _use(self, *args, **kwargs):
    raise errors.located(_UseOfUndefined, f"'{self.symbol_name}' is used before assignment (it is not assigned on "
                                          "every path that reaches this use)")


class Undefined:
    """The value of a symbol that is not bound yet. Any use of it raises
    UnboundLocalError, as reading an unbound local does."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name):
        object.__setattr__(self, "symbol_name", symbol_name)

    def __repr__(self):
        return f"<undefined {self.symbol_name}>"

    def __getattr__(self, name):
        raise AttributeError(f"'{self.symbol_name}' is used before it is assigned a value, so it has no "
                             f"attribute {name!r}")

    __bool__ = __call__ = __iter__ = __len__ = __getitem__ = __index__ = __int__ = __float__ = _use
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _use
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _use
    __neg__ = __pos__ = __abs__ = __invert__ = __lt__ = __le__ = __gt__ = __ge__ = _use
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _use


class UndefinedReturnValue(Undefined):
    """The return value of a function that has not returned yet."""

    __slots__ = ()

    def __init__(self):
        super().__init__("the return value")


def ldu(load, name):
    """`load()`, or an Undefined placeholder when the symbol is unbound."""
    try:
        return load()
    except (NameError, AttributeError, KeyError, IndexError):
        return Undefined(name)


def ld(value, name):
    """A read of a symbol that may hold an Undefined placeholder: fails as
    reading an unbound local does."""
    if isinstance(value, Undefined):
        raise UnboundLocalError(f"'{name}' is used before assignment")  # TensorFlow's AutoGraph text
    return value


def is_undefined(value):
    return isinstance(value, Undefined)


def retval(do_return, value):
    """The result of a converted function with lowered returns."""
    if do_return is True:
        return value
    if do_return is False or do_return is None:
        return None
    # do_return is a tensor: whether the function returned depends on data.
    if value is None or isinstance(value, UndefinedReturnValue):
        return None
    raise errors.located(ValueError, "a return statement returns a value on some paths but the function can "
                                     "also end without one, depending on a tensor; every path of a function "
                                     "converted to a graph must return a value of the same kind (add a return at "
                                     "the end of the function)")
