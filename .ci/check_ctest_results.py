#!/usr/bin/env python3
"""Checks that a ctest run ran what it should: `.ci/dev test` calls it after ctest.

ctest passes a run in which tests were skipped (exit 77, GTEST_SKIP, a failed fixture) or
never registered (a CMake condition left them out). This fails such a run and names the tests:

- every line of EXPECTED (a regular expression, `#` comments) must match at least one
  registered test name (from `ctest --show-only=json-v1`);
- every registered test must appear in JUNIT (ctest --output-junit) as run;
- a test that did not run (skipped, disabled, fixture failed) is an error unless it carries
  the `gpu` label: those skip cleanly on a machine without a CUDA device.

Usage: check_ctest_results.py BUILD_DIR JUNIT_XML EXPECTED [CTEST_SELECTION...]
CTEST_SELECTION: the selection the run used (e.g. -R REGEX), when not every test ran; the
expected tests are still looked up among all registered ones.
Exit 0 when all holds, 1 otherwise (the problems on stderr), 2 on bad input.
Debian's /usr/bin/python3, standard library only.
"""

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

ALLOWED_SKIP_LABEL = "gpu"


def registered_tests(build_dir, selection=()):
    """{name: set of labels} of every test ctest knows in `build_dir` (and `selection` picks)."""
    out = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1", *selection],
                         check=True, capture_output=True, text=True).stdout
    tests = {}
    for test in json.loads(out).get("tests", []):
        labels = set()
        for prop in test.get("properties", []):
            if prop.get("name") == "LABELS":
                labels.update(prop.get("value", []))
        tests[test["name"]] = labels
    return tests


def expected_patterns(path):
    patterns = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            try:
                patterns.append((text, re.compile(text)))
            except re.error as e:
                raise ValueError("%s:%d: bad pattern %r: %s" % (path, number, text, e))
    return patterns


def junit_results(path):
    """{name: (status, message)}; status is run, fail, notrun or disabled."""
    results = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        skipped = case.find("skipped")
        message = skipped.get("message", "") if skipped is not None else ""
        if not message and case.get("status") == "disabled":
            message = "DISABLED"
        results[case.get("name")] = (case.get("status", ""), message)
    return results


def check(registered, selected, patterns, results, expected_path):
    """The problems found, one line each; and the number of gpu tests that skipped."""
    problems = []
    for text, pattern in patterns:
        if not any(pattern.fullmatch(name) for name in registered):
            problems.append("not registered: no test matches %r (%s)" % (text, expected_path))
    gpu_skips = 0
    for name in sorted(selected):
        if name not in results:
            problems.append("did not run: %s (absent from the ctest results)" % name)
            continue
        status, message = results[name]
        if status in ("run", "fail"):
            continue  # failures are ctest's own verdict
        if ALLOWED_SKIP_LABEL in selected[name]:
            gpu_skips += 1
            continue
        problems.append("skipped: %s (%s)" % (name, message or status))
    return problems, gpu_skips


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    build_dir, junit, expected = argv[1:4]
    try:
        registered = registered_tests(build_dir)
        selected = registered_tests(build_dir, argv[4:]) if len(argv) > 4 else registered
        patterns = expected_patterns(expected)
        results = junit_results(junit)
    except (OSError, ValueError, ET.ParseError, subprocess.CalledProcessError) as e:
        sys.stderr.write("check_ctest_results: %s\n" % e)
        return 2
    problems, gpu_skips = check(registered, selected, patterns, results, expected)
    ran = sum(1 for status, _ in results.values() if status in ("run", "fail"))
    print("ctest results: %d registered, %d selected, %d ran, %d gpu tests skipped (no device)"
          % (len(registered), len(selected), ran, gpu_skips))
    if problems:
        sys.stderr.write("The suite did not run everything it should (%d problems):\n"
                         % len(problems))
        for problem in problems:
            sys.stderr.write("  " + problem + "\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
