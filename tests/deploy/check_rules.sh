#!/usr/bin/env bash
# Checks deploy/prometheus/adaptd-rules.yaml with promtool (syntax, PromQL, templates), runs
# its unit tests (tests/deploy/adaptd-rules-test.yaml: alerts firing past their thresholds and
# quiet below), and that the generated Grafana files match deploy/grafana/generate.py. Fails
# without promtool.
set -euo pipefail
root=${1:?usage: check_rules.sh REPO_ROOT}
if ! command -v promtool >/dev/null; then
  echo "FAIL: promtool is not installed (Debian package 'prometheus')"
  exit 1
fi
promtool check rules "$root/deploy/prometheus/adaptd-rules.yaml"
promtool test rules "$root/tests/deploy/adaptd-rules-test.yaml"
/usr/bin/python3 "$root/deploy/grafana/generate.py" --check
echo "dashboard files are up to date"
