#!/usr/bin/env bash
# Runs a Python test with the interpreter of the venv that `.ci/dev test` makes
# (python_client_venv: a fresh venv of the PATH's python3 with `pip install client/python`),
# and no PYTHONPATH, so the test sees the installed package only. A missing venv fails the
# test: the package check must not pass without having run.
set -uo pipefail
venv=${1:?usage: run_in_client_venv.sh VENV_DIR TEST_SCRIPT [ARGS...]}
script=${2:?usage: run_in_client_venv.sh VENV_DIR TEST_SCRIPT [ARGS...]}
shift 2
if [ ! -x "$venv/bin/python" ]; then
  echo "FAIL: no Python client venv at $venv: \`bash .ci/dev test\` creates it" \
    "(python_client_venv: python3 -m venv, then pip install client/python)" >&2
  exit 1
fi
exec env -u PYTHONPATH "$venv/bin/python" "$script" "$@"
