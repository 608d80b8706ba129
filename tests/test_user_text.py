"""The text users read speaks to them: the README, CONTRIBUTING.md, the
documentation pages, the command line's --help and the benchmarks' --help
mention only files that exist in the repository, and nothing about how the
project is worked on (issue numbers, work sessions, a machine's paths, design
notes users do not have)."""

import ast
import glob
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "bench" / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
# Folders of the repository a path in the text may start with; `treadle/` is the package's source.
TOP_LEVEL = {"bench", "docs", "fuzz", "proto", "scripts", "src", "tests", ".ci", "treadle"}
INTERNAL = [
    (re.compile(r"\bissues?[- #]?\d+", re.I), "an issue number"),
    (re.compile(r"\b(this|that|the|an?|each|earlier|later|previous|next) session\b|\bsession's\b", re.I), "a work session"),
    (re.compile(r"/work/|/home/|/tmp/|/root/"), "a path of a machine"),
    (re.compile(r"§"), "a section of a design note"),
    (re.compile(r"\bBENCHMARKS\.md|\bARCHITECTURE\.md|shared/API\.md"), "a design note users do not have"),
    (re.compile(r"\bother streams?\b|asked us\b", re.I), "how the work is split"),
]


def mentioned_paths(text):
    """Repository paths the text names: in `code` spans and as link targets."""
    candidates = re.findall(r"`([^`\n]+)`", text) + re.findall(r"\]\(([^)\s#]+)", text)
    for candidate in candidates:
        for word in candidate.split():
            word = word.rstrip(".,;:)")
            head = word.split("/")[0]
            if "/" in word and head in TOP_LEVEL and not re.search(r"[<>{}$]", word):
                yield word


def exists(path, page):
    roots = [ROOT, ROOT / "src" / "pyfront", page.parent]
    return any(glob.glob(str(root / path)) for root in roots)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_files_mentioned_exist(page):
    missing = sorted({p for p in mentioned_paths(page.read_text()) if not exists(p, page)})
    assert not missing, f"{page.relative_to(ROOT)} mentions files that are not in the repository: {missing}"


def internal_phrases(text):
    return [f"{why}: {m.group(0)!r}" for pattern, why in INTERNAL for m in pattern.finditer(text)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_speak_to_users(page):
    found = internal_phrases(page.read_text())
    assert not found, f"{page.relative_to(ROOT)}: {found}"


def test_the_checks_catch_what_they_should():
    assert internal_phrases("measured in this session, against the issue-15 baseline (BENCHMARKS.md §2)")
    assert not internal_phrases("TensorFlow 1's sessions and placeholders; issues go to the tracker")
    page = ROOT / "README.md"
    assert not exists("bench/no_such_benchmark.py", page) and exists("bench/treelstm_bench.py", page)
    assert list(mentioned_paths("see `tests/nothing.py` and [x](docs/loom.md)")) == ["tests/nothing.py", "docs/loom.md"]


BENCH_SCRIPTS = sorted((ROOT / "bench").glob("*.py"))


@pytest.mark.parametrize("script", BENCH_SCRIPTS, ids=lambda p: p.name)
def test_benchmark_help_speaks_to_users(script):
    """A benchmark's --help shows its module docstring and its arguments' help."""
    tree = ast.parse(script.read_text())
    texts = [ast.get_docstring(tree) or ""]
    texts += [node.value for node in ast.walk(tree)
              if isinstance(node, ast.keyword) and node.arg in ("help", "description")
              and isinstance(node.value, ast.Constant)]
    found = internal_phrases("\n".join(t.value if isinstance(t, ast.Constant) else t for t in texts))
    assert not found, f"bench/{script.name}: {found}"


def test_command_line_help_speaks_to_users():
    for args in ([], ["demo"], ["info"], ["show"], ["run"], ["loom", "run"], ["loom"]):
        result = subprocess.run([sys.executable, "-m", "treadle", *args, "--help"], capture_output=True, text=True,
                                cwd=ROOT, timeout=120)
        assert result.returncode == 0, result.stderr
        found = internal_phrases(result.stdout)
        assert not found, f"treadle {' '.join(args)} --help: {found}"
