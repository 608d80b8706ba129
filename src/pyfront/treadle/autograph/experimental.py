"""td.autograph.experimental: do_not_convert, set_loop_options and Feature."""

import functools

from treadle.autograph.features import Feature


def do_not_convert(func=None):
    """Makes `func` run as plain Python even when called from converted code
    (or traced by td.function): neither it nor what it calls is converted.
    Usable as `@do_not_convert` and `do_not_convert(func)`."""
    if func is None:
        return do_not_convert

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    wrapper.__ag_do_not_convert__ = True
    return wrapper


def set_loop_options(shape_invariants=None, maximum_iterations=None, parallel_iterations=None, swap_memory=None):
    """Options for the loop whose body this call starts (AutoGraph reads the
    call while converting and removes it): `shape_invariants`, a list of
    (loop variable, shape) pairs whose shape may change between iterations
    (None where a dimension varies); `maximum_iterations`. In code that is
    not converted it does nothing."""
    return None


__all__ = ["Feature", "do_not_convert", "set_loop_options"]
