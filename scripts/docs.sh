#!/usr/bin/env bash
# Builds the documentation site (Material for MkDocs, API reference from the
# docstrings, pictures drawn by docs/hooks/figures.py) into build/docs with
# warnings as errors, and runs every example of its pages and the checks of
# what they state (tests/test_docs.py, tests/test_user_text.py,
# tests/test_docstrings.py). Run after scripts/setup.sh (CI: .ci/run does).
# The site works offline, also opened from disk.
#
#   bash scripts/docs.sh            # then open build/docs/index.html
#   .venv/bin/mkdocs serve          # live preview while editing docs/
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VPY=.venv/bin/python
export PIP_DISABLE_PIP_VERSION_CHECK=1
# The docs extra of pyproject.toml, without reinstalling treadle itself.
mapfile -t DOCS_REQUIRES < <("$VPY" - <<'PY'
try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["docs"]))
PY
)
"$VPY" -m pip install -q "${DOCS_REQUIRES[@]}"
export NO_MKDOCS_2_WARNING=1
.venv/bin/mkdocs build --strict --site-dir build/docs
"$VPY" -m pytest -q tests/test_docs.py tests/test_user_text.py tests/test_docstrings.py
echo "docs: built in build/docs (open build/docs/index.html)"
