"""What the `treadle` command line's modules share: exit statuses, the
errors a command raises, argparse types and the --timeout argument."""

import argparse
import os

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
# A closed output pipe: the status of a Unix tool killed by SIGPIPE, as the
# shell reports it (128 + 13).
EXIT_PIPE = 141


class CommandError(Exception):
    """Bad input the user can fix (exit status 1); its message is printed as is."""


class UsageError(Exception):
    """A command line argparse (or a command) rejects (exit status 2)."""


class Parser(argparse.ArgumentParser):
    """argparse, with one-line usage errors raised instead of printed."""

    def error(self, message):
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def int_at_least(minimum):
    """An argparse type: an integer of at least `minimum`."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value
    parse.__name__ = f"integer of at least {minimum}"
    return parse


positive_int = int_at_least(1)


def existing_file(path, what="file"):
    """`path` if it names a regular file; CommandError saying what is wrong otherwise."""
    if os.path.isdir(path):
        raise CommandError(f"{path}: is a directory, not a {what}")
    if not os.path.exists(path):
        raise CommandError(f"{path}: no such {what}")
    return path


def seconds(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"must be at least 0, got {text}")
    return value


def add_timeout_argument(parser):
    parser.add_argument("--timeout", type=seconds, metavar="SECONDS",
                        help="stop the runs after SECONDS (td.experimental.deadline); exit status 124")
