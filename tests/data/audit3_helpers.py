"""Weave functions and scripts of the third audit's regression tests
(module-level, so that spawned workers can import them)."""

import time

import numpy as np


def weave_hangs_on_3(weaver, i):
    if i == 3:
        while True:
            time.sleep(1)
    c = weaver(np.full(3, float(i)))
    weaver.add_output(weaver.add(weaver.x, c))
    return i
