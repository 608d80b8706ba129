"""A Python loop over a dataset that AutoGraph did not convert (source not
available: the REPL, `python -c`, exec(); or autograph=False) raises at once
saying why and what to do, instead of tracing without end."""

import os
import subprocess
import sys
import textwrap

import pytest

import treadle as td

WHY = "never ends.*not converted.*python -c.*Define the function in a file"


def _exec(source):
    namespace = {"td": td}
    exec(textwrap.dedent(source), namespace)  # no source file: AutoGraph cannot convert it
    return namespace["f"]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("loop", [
    "for x in ds: s += x",
    "for x in iter(ds): s += x",
    "s += td.add_n([x for x in ds])",
])
def test_unconverted_loop_in_exec_raises(loop):
    f = _exec(f"""
        @td.function
        def f(ds):
            s = td.constant(0, td.int64)
            {loop}
            return s
        """)
    with pytest.raises(TypeError, match=WHY):
        f(td.data.Dataset.range(5))


def test_loop_over_a_dataset_the_function_closes_over_with_autograph_off():
    ds = td.data.Dataset.range(3)

    @td.function(autograph=False)
    def f():
        s = td.constant(0, td.int64)
        for x in ds:
            s += x
        return s
    with pytest.raises(TypeError, match=WHY):
        f()


def test_list_of_a_dataset_is_stopped_after_a_bound():
    @td.function(autograph=False)
    def f(ds):
        return td.add_n(list(ds))
    with pytest.raises(TypeError, match="next\\(\\) was called 10000 times.*never ends"):
        f(td.data.Dataset.range(5))


def test_explicit_next_still_works_without_autograph():
    @td.function(autograph=False)
    def f(ds):
        it = iter(ds)
        return next(it) + next(it) * 10
    assert f(td.data.Dataset.range(1, 5)).numpy() == 21


def test_python_dash_c_raises_instead_of_tracing_forever():
    program = textwrap.dedent("""
        import treadle as td
        @td.function
        def f(ds):
            s = td.constant(0, td.int64)
            for x in ds:
                s += x
            return s
        try:
            f(td.data.Dataset.range(5))
        except TypeError as e:
            print("refused:", e)
        """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=120)
    assert "refused: td.data: iterating a dataset: a Python loop over a dataset" in out.stdout, out.stderr[-2000:]


def test_converted_loops_are_unchanged():
    @td.function
    def f(ds):
        s = td.constant(0, td.int64)
        for x in ds:
            s += x
        return s
    assert f(td.data.Dataset.range(5)).numpy() == 10
