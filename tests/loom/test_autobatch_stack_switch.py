"""The AddressSanitizer hook of autobatch's greenlet switches: absent (and
never called) in a normal process, the runtime's own function under ASan."""

import os

import pytest

from treadle.loom.autobatch import scheduler, stack_switch

UNDER_ASAN = "libasan" in os.environ.get("LD_PRELOAD", "")


@pytest.mark.skipif(UNDER_ASAN, reason="the sanitizer runtime is loaded")
def test_without_the_sanitizer_there_is_no_hook():
    assert stack_switch.after_switch is None
    assert scheduler.after_switch is None


@pytest.mark.skipif(not UNDER_ASAN, reason="needs the sanitizer runtime (scripts/sanitizers.sh)")
def test_under_the_sanitizer_the_hook_is_the_runtimes_and_can_be_called():
    assert stack_switch.after_switch is not None
    stack_switch.after_switch()  # clears the shadow above this frame: no report, no crash
