"""The worker process of the fuzzer: reads inputs from stdin, consumes each
(fuzz/targets.py) and writes one line per input. Its memory is capped, so an
allocation beyond what an input can justify shows as a MemoryError instead
of exhausting the machine (TREADLE_FUZZ_MEMORY bytes, 3 GiB by default).

Protocol: the supervisor writes `<kind> <length>\\n<bytes>`; the worker
answers `accepted`, `rejected: <type>`, `wrong: <detail>` or `oom: <detail>`."""

import os
import resource
import sys
import traceback

MEMORY_LIMIT = int(os.environ.get("TREADLE_FUZZ_MEMORY", str(3 << 30)))


def main():
    if MEMORY_LIMIT > 0:  # 0: no cap (under AddressSanitizer, which reserves terabytes of address space)
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import warnings
    warnings.simplefilter("ignore")
    from fuzz import targets
    for kind in targets.KINDS.values():  # build the fixtures before the first input
        kind.seeds()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stdout.write(b"ready\n")
    stdout.flush()
    while True:
        header = stdin.readline()
        if not header:
            return
        kind, length = header.decode().split()
        data = stdin.read(int(length))
        try:
            answer = targets.consume(kind, data)
        except MemoryError as e:
            answer = f"oom: {e}"
        except Exception as e:  # noqa: BLE001 - anything else is a finding
            tb = traceback.format_exception(type(e), e, e.__traceback__)[-3:]
            answer = "wrong: " + " | ".join(line.strip().replace("\n", " ") for line in tb)[:2000]
        stdout.write(answer.replace("\n", " ").encode() + b"\n")
        stdout.flush()


if __name__ == "__main__":
    main()
