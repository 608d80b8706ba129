"""Greenlet stack switches made known to AddressSanitizer.

A greenlet switch copies slices of the C stack out to the heap and others
back in, without telling AddressSanitizer (it makes no fiber annotations).
The shadow memory of the stack then still describes the frames that were
there before: an instrumented function called after the switch may find
its own locals marked as another frame's red zone, a false report.

When the sanitizer's runtime is loaded (the ASan test run preloads it),
`after_switch()` clears the shadow of the stack above the current frame,
as the runtime does itself after a longjmp; frames made later mark their
own red zones again. Without the sanitizer it is None, and nothing is
called."""

import ctypes


def _asan_handle_no_return():
    try:
        function = ctypes.CDLL(None)["__asan_handle_no_return"]
    except (AttributeError, OSError):  # no sanitizer runtime in the process
        return None
    function.restype = None
    function.argtypes = []
    return function


after_switch = _asan_handle_no_return()
