"""Converted code on Python values behaves exactly like the original:
same results, same exceptions, same side effects."""

import pytest

from treadle.autograph import converter
from . import python_programs as programs


def _outcome(fn, args):
    try:
        return ("value", fn(*args))
    except Exception as e:  # the exception type and message are part of the behaviour
        return ("raises", type(e), str(e))


@pytest.mark.parametrize("fn,cases", programs.PROGRAMS, ids=[p[0].__name__ for p in programs.PROGRAMS])
def test_converted_matches_python(fn, cases):
    converted = converter.convert(fn)
    assert converted is not fn, "the function should have been converted"
    for args in cases:
        programs.COUNTER[0] = 0
        expected = _outcome(fn, args)
        counter_after_original = programs.COUNTER[0]
        programs.COUNTER[0] = 0
        got = _outcome(converted, args)
        assert got[:2] == expected[:2], (fn.__name__, args, got, expected)
        assert programs.COUNTER[0] == counter_after_original, (fn.__name__, args)


def test_global_statement_updates_the_module_global():
    programs.GLOBAL_TOTAL = 0
    expected = programs.modifies_global(6)
    programs.GLOBAL_TOTAL = 0
    assert converter.convert(programs.modifies_global)(6) == expected
    assert programs.GLOBAL_TOTAL == expected


def test_a_converted_closure_updates_the_original_cell():
    conv = converter.convert(programs.ACCUMULATE)
    first = programs.ACCUMULATE([1, -1, 2])
    assert conv([4]) == first + 4
    assert programs.ACCUMULATE([]) == first + 4  # the same `total` cell
