"""The `treadle` command line (also `python -m treadle`).

Subcommands (each in its own module, which adds its parser with `register`):
  info   versions and libraries, or what a file treadle wrote holds (cli_files)
  show   a file in full: a saved function's graph, a loom's ops, a schedule file's records (cli_files)
  demo   the Loom on a few trees, and what batching saved (cli_demo)
  loom   run a saved loom over a schedule file, or describe one (cli_loom)
  run    run a saved function (td.save) on .npy inputs (cli_saved)

Manners: an error is one line on standard error, `treadle: error: ...`, with
exit status 1 for bad input (a missing, truncated or corrupt file, a file of
the wrong kind) and 2 for a usage error; `--debug` adds the traceback. A
closed output pipe (`treadle show f | head`) ends the command quietly.
"""

import argparse
import os
import sys
import traceback

import treadle as td
from treadle import cli_demo, cli_files, cli_loom, cli_saved, errors
from treadle.cli_common import EXIT_BAD_INPUT, EXIT_OK, EXIT_PIPE, EXIT_USAGE, CommandError, Parser, UsageError


def run_with_timeout(args):
    timeout = getattr(args, "timeout", None)
    if timeout is None:
        return args.run(args)
    try:
        with td.experimental.deadline(timeout):
            return args.run(args)
    except td.errors.DeadlineExceededError:
        print(f"treadle: timed out after {timeout:g} s", file=sys.stderr)
        return 124


def _build_parser():
    parser = Parser(
        prog="treadle", description="treadle: a dataflow runtime for dynamic computation.",
        epilog="Exit status: 0 success, 1 bad input (missing, corrupt or wrong kind of file), 2 usage error. "
               "Also run as 'python -m treadle'.")
    parser.add_argument("--version", action="version", version=f"treadle {td.__version__}",
                        help="print treadle's version and exit")
    parser.add_argument("--debug", action="store_true", help="on an error, also print the Python traceback")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in (cli_files, cli_demo, cli_loom, cli_saved):
        module.register(sub)
    _add_debug_everywhere(parser)
    return parser


def _add_debug_everywhere(parser):
    """`--debug` after a subcommand too (`treadle loom run ... --debug`)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                if "--debug" not in subparser._option_string_actions:
                    subparser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                           help="on an error, also print the Python traceback")
                _add_debug_everywhere(subparser)


def _one_line(error):
    """The message of `error` on one line, naming its kind where that helps."""
    if isinstance(error, (CommandError, UsageError)):
        text = str(error)
    elif isinstance(error, errors.OpError):
        text = error.message
    elif isinstance(error, OSError) and error.filename is not None:
        text = f"{error.filename}: {error.strerror or error}"
    elif isinstance(error, (OSError, ValueError, TypeError)):
        text = str(error)
    else:  # not a kind of bad input we expect: say so, the traceback is for a bug report
        text = f"unexpected {type(error).__name__}: {error} (rerun with --debug for the traceback)"
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _report(error, debug):
    if debug:
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    # A usage error's message starts with the command's own name ("treadle loom run: ...").
    prefix = "" if isinstance(error, UsageError) else "treadle: error: "
    print(prefix + _one_line(error), file=sys.stderr)


def _quiet_closed_pipe():
    """The reader went away (`| head`): send what is left to /dev/null, so the
    interpreter's final flush does not complain either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file descriptor (e.g. captured in tests)
        pass
    return EXIT_PIPE


def main(argv=None):
    """Runs the command line `argv` (default sys.argv[1:]); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv[:argv.index("--")] if "--" in argv else "--debug" in argv
    try:
        parser = _build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # --help and --version
            return e.code if isinstance(e.code, int) else EXIT_OK
        if getattr(args, "run", None) is None:
            parser.print_help()
            return EXIT_OK
        status = run_with_timeout(args)
        sys.stdout.flush()  # a closed pipe shows here, while we can still handle it
        return status
    except BrokenPipeError:
        return _quiet_closed_pipe()
    except KeyboardInterrupt:
        print("treadle: interrupted", file=sys.stderr)
        return 130
    except UsageError as e:
        _report(e, debug)
        return EXIT_USAGE
    except Exception as e:  # every other error is reported on one line
        _report(e, debug)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
