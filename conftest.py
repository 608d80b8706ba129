"""pytest set-up for the whole suite.

A shell without job control starts background commands with SIGINT ignored,
and processes inherit that: a suite started that way (`nohup`, `cmd &` in a
CI script) would give the Ctrl-C tests' child processes no KeyboardInterrupt
at all, and they would wait until their time limit. A Python handler is not
inherited across exec, so installing Python's own here gives every child the
interpreter's default again."""

import signal

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
