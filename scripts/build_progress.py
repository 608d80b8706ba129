"""Shows a build's progress on one terminal line: reads the verbose output of
`pip install -v` (CMake's configure lines, ninja's "[n/N] ..." steps) from
standard input, keeps all of it in a log file, and prints the stage and a
counter. On failure the caller shows the log's end.

    pip install -v ... 2>&1 | python scripts/build_progress.py build/setup.log
"""

import re
import shutil
import sys

STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]\s+(.*)")  # pip -v indents the build's output


def main(log_path):
    width = shutil.get_terminal_size((80, 20)).columns
    shown = False
    with open(log_path, "w") as log:
        for line in sys.stdin:
            log.write(line)
            step = STEP.match(line)
            if step:
                done, total, what = int(step.group(1)), int(step.group(2)), step.group(3)
                target = what.split()[-1].rsplit("/", 1)[-1] if what.split() else ""
                text = f"setup: compiling {done}/{total} ({100 * done // total}%) {target}"
            elif line.strip().startswith(("-- Configuring done", "-- Generating done")):
                text = "setup: configured the build"
            elif line.lstrip().startswith("Successfully installed"):
                text = "setup: installed"
            else:
                continue
            sys.stdout.write("\r" + text[:width - 1].ljust(width - 1))
            sys.stdout.flush()
            shown = True
    if shown:
        sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
