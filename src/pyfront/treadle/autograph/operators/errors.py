"""Errors that point at the user's source.

Converted code is compiled with the user's file name and line numbers, so a
traceback through it already shows user lines. The runtime's own errors
(a variable defined in one branch only, a loop variable changing type...)
are raised from inside the runtime; they name the user line by finding the
innermost frame that runs converted code."""

import linecache
import sys

from treadle import errors as td_errors

class LoopNeverRanError(td_errors.InvalidArgumentError, UnboundLocalError):
    """A loop over a tensor that defines variables used after it ran no
    iteration. It is TensorFlow's error for this (an `InvalidArgumentError`
    when the graph runs) and Python's (the variables are unbound)."""

    def __init__(self, message):
        super().__init__(None, None, message)


# code object of converted code (every nested generated function included)
# -> name of the user function it was converted from
CONVERTED_CODE = {}


def register(code, function_name):
    CONVERTED_CODE[code] = function_name
    for const in code.co_consts:
        if hasattr(const, "co_consts"):
            register(const, function_name)


def user_frame():
    """The innermost frame running converted code, or None."""
    f = sys._getframe(1)
    while f is not None:
        if f.f_code in CONVERTED_CODE:
            return f
        f = f.f_back
    return None


def user_location():
    """(filename, lineno, function name) of the user line being run, or None."""
    f = user_frame()
    if f is None:
        return None
    return f.f_code.co_filename, f.f_lineno, CONVERTED_CODE[f.f_code]


def format_location(location):
    filename, lineno, name = location
    line = linecache.getline(filename, lineno).strip()
    text = f'  File "{filename}", line {lineno}, in {name}'
    return text + (f"\n    {line}" if line else "")


def located(exc_type, message):
    """An exception of `exc_type` whose message ends with the user line being run."""
    location = user_location()
    if location is not None:
        message = f"{message}\n\n{format_location(location)}"
    return exc_type(message)
