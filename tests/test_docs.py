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
    site = tmp_path / "site"
    assert (site / "loom.html").exists()  # file names that work from disk (file://)
    reference = (site / "api.html").read_text()
    for name in ("make_weaver", "weave_trees", "from_tensor_slices", "padded_batch", "Ragged", "Schedule",
                 "parallel_weave", "trainable_variables"):
        assert name in reference, name  # from the docstrings
    for figure in ("loom-depths.svg", "treelstm-same-process.svg", "treelstm-grid.svg"):
        assert (site / "figures" / figure).read_bytes().startswith(b"<?xml"), figure  # drawn at build time
    assert 'class="md-clipboard' in (site / "loom.html").read_text() or "content.code.copy" in \
        (site / "loom.html").read_text()  # copy buttons
    assert '<span class="' in (site / "loom.html").read_text()  # highlighted when built (Pygments spans)
    external = sorted({url for page in site.glob("*.html")
                       for url in re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="(https?://[^"]+)"',
                                             page.read_text())})
    assert not external, f"the site loads from elsewhere: {external}"


# ------------------------------------------------------------ facts the pages state
DTYPE_LIST = re.compile(r"((?:`\w+`, ){2,}(?:`\w+`,? )?(?:(?:and|or) )?`\w+`)")
NARROW = {"float16", "bfloat16", "int8", "uint8"}


def stated_dtype_lists(text):
    """The lists of dtypes a page states (`a`, `b` and `c`), as sets of names."""
    import treadle as td
    out = []
    for m in DTYPE_LIST.finditer(re.sub(r"\s+", " ", text)):
        names = set(re.findall(r"`(\w+)`", m.group(1)))
        if names and all(isinstance(getattr(td, n, None), td.DType) for n in names):
            out.append(names)
    return out


@pytest.mark.parametrize("page", ["coming-from-fold.md", "coming-from-tf-function.md", "loom.md"])
def test_the_dtype_lists_are_complete_and_true(page):
    """Every dtype list of the page names the narrow dtypes, and a loom or a tensor takes each dtype named."""
    import numpy as np
    import treadle as td
    lists = stated_dtype_lists((DOCS / page).read_text())
    assert lists, f"docs/{page} states no dtype list"
    for names in lists:
        assert NARROW <= names, f"docs/{page} lists {sorted(names)} without {sorted(NARROW - names)}"
        for name in names - {"string", "resource", "variant"}:
            dtype = getattr(td, name)
            assert td.loom.TypeShape(dtype, (2,)).dtype == dtype
            assert td.cast(td.constant([1, 2]), dtype).dtype == dtype


def test_jit_compile_warns_as_the_page_says():
    import warnings
    import treadle as td
    assert "`jit_compile=True` warns" in (DOCS / "coming-from-tf-function.md").read_text()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        doubled = td.function(lambda x: x * 2.0, jit_compile=True)(td.constant(2.0))
    assert float(doubled) == 4.0 and any(issubclass(w.category, UserWarning) for w in caught)


def test_plain_objects_trace_by_equality_and_hash_as_the_page_says():
    import treadle as td
    assert "other objects by `==` and `hash`" in " ".join((DOCS / "coming-from-tf-function.md").read_text().split())

    class Key:
        def __init__(self, v):
            self.v = v

        def __eq__(self, other):
            return isinstance(other, Key) and other.v == self.v

        def __hash__(self):
            return hash(self.v)

    class Unhashable:
        __hash__ = None

    @td.function
    def f(x, key):
        return x + key.v

    a, b, c = Key(1), Key(1), Key(2)
    f(1.0, a)
    f(1.0, b)  # equal and alive: the same trace
    assert f.experimental_get_tracing_count() == 1
    f(1.0, c)
    assert f.experimental_get_tracing_count() == 2
    with pytest.raises(TypeError, match="not hashable"):
        td.function(lambda x, k: x)(1.0, Unhashable())
