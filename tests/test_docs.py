"""The documentation's examples run: every ```python block of each page of
docs/ and of the README, in order, in one namespace per page (like a notebook), in a scratch
directory. A ```text block right after a python block is the output it must
print (`...` in it stands for any text, as in doctest). A block after `<!-- docs-test: requires NAME -->` runs only where
NAME (e.g. td.loom.Ragged) exists, so a page may document what another
branch is adding; the skip is reported.

The site itself is built by scripts/docs.sh (mkdocs build --strict), also
here when mkdocs is installed."""

import contextlib
import io
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md"))
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
REQUIRES = re.compile(r"<!--\s*docs-test:\s*requires\s+([\w.]+)\s*-->\s*$")


def blocks(text):
    """[(code, expected output or None, required name or None, line)] of a page."""
    fences = list(FENCE.finditer(text))
    out = []
    for i, m in enumerate(fences):
        if m.group(1) != "python":
            continue
        expected = None
        if i + 1 < len(fences) and fences[i + 1].group(1) == "text" and \
                not text[m.end():fences[i + 1].start()].strip():
            expected = fences[i + 1].group(2)
        before = text[:m.start()].rstrip().splitlines()
        required = REQUIRES.search(before[-1]) if before else None
        out.append((m.group(2), expected, required and required.group(1), text[:m.start()].count("\n") + 1))
    return out


def resolve(name, namespace):
    head, *rest = name.split(".")
    obj = namespace.get(head) or __import__({"td": "treadle", "np": "numpy"}.get(head, head))
    for part in rest:
        obj = getattr(obj, part)
    return obj


def normalized(text):
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def matches(expected, got):
    """`got` is `expected`, where `...` in `expected` stands for any text within a line."""
    pattern = re.escape(normalized(expected)).replace(re.escape("..."), "[^\n]*")
    return re.fullmatch(pattern, normalized(got)) is not None


def test_every_page_has_examples_or_says_why():
    assert {"index.md", "getting-started.md", "loom.md", "coming-from-fold.md", "coming-from-tf-function.md",
            "performance.md", "command-line.md", "api.md"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_examples_run(page, tmp_path, monkeypatch):
    run_examples(DOCS / page, tmp_path, monkeypatch)


def test_readme_examples_run(tmp_path, monkeypatch):
    run_examples(ROOT / "README.md", tmp_path, monkeypatch)


def run_examples(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"docs_{path.stem.replace('-', '_')}"}
    skipped = []
    for code, expected, required, line in blocks(path.read_text()):
        if required:
            try:
                resolve(required, namespace)
            except (AttributeError, ImportError):
                skipped.append(f"line {line} (needs {required})")
                continue
        # A real file, so that AutoGraph (and tracebacks) can read the source;
        # blank lines first keep the page's line numbers.
        source = tmp_path / f"docs_{path.stem.replace('-', '_')}_line{line}.py"
        source.write_text("\n" * line + code)
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            try:
                exec(compile(source.read_text(), str(source), "exec"), namespace)
            except Exception as e:
                raise AssertionError(f"{path.relative_to(ROOT)}, the block at line {line} raised {type(e).__name__}: {e}") from e
        if expected is not None:
            got = stdout.getvalue()
            assert matches(expected, got), f"{path.relative_to(ROOT)}, the block at line {line} printed:\n{got}\nnot:\n{expected}"
    if skipped:
        pytest.skip(f"{path.relative_to(ROOT)}: skipped blocks at " + ", ".join(skipped))


def test_the_site_builds(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    mkdocs = shutil.which("mkdocs", path=os.path.dirname(sys.executable)) or "mkdocs"
    result = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "site" / "loom" / "index.html").exists()
    reference = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "make_weaver" in reference and "weave_trees" in reference  # from the docstrings
