"""The build step of the adaptd-client wheel: generates the adapt.v1 modules from the .proto files.

build_py runs grpc_tools' protoc (Python messages, type stubs and gRPC stubs) on every
proto/adapt/v1/*.proto into <build_lib>/adaptd_client/_gen/adapt/v1, rewrites the generated
imports between those modules to relative ones (so they live inside this package and never
clash with another top-level `adapt`), and checks that the versions the generated code demands
lie inside the grpcio and protobuf ranges pyproject.toml declares. The .proto files come from
proto/ beside this file in an sdist, else from the repository's proto/ two levels up; sdist
copies them in.
"""

import glob
import os
import re
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_PACKAGE = os.path.join("adapt", "v1")
CANDIDATE_ROOTS = (os.path.join(HERE, "proto"), os.path.join(HERE, "..", "..", "proto"))
GENERATED_PACKAGE = os.path.join("adaptd_client", "_gen")

_ABSOLUTE_IMPORT = re.compile(r"^from adapt\.v1 import (\w+)", re.MULTILINE)
_ANY_ADAPT_IMPORT = re.compile(r"^\s*(from|import) adapt\b", re.MULTILINE)


def proto_root():
    for root in CANDIDATE_ROOTS:
        if glob.glob(os.path.join(root, PROTO_PACKAGE, "*.proto")):
            return os.path.normpath(root)
    raise RuntimeError(
        "adaptd-client: no adapt/v1/*.proto found under %s; build from the adaptd repository "
        "(client/python) or from an sdist made there" % " or ".join(CANDIDATE_ROOTS))


def generate(out_root):
    """Generates adaptd_client/_gen/adapt/v1 under out_root; returns the files written."""
    from grpc_tools import protoc  # a build requirement (pyproject.toml)
    import grpc_tools

    root = proto_root()
    protos = sorted(glob.glob(os.path.join(root, PROTO_PACKAGE, "*.proto")))
    gen_root = os.path.join(out_root, GENERATED_PACKAGE)
    shutil.rmtree(gen_root, ignore_errors=True)
    os.makedirs(os.path.join(gen_root, PROTO_PACKAGE))
    # protoc's own well-known types (google/protobuf/any.proto, ...) ship inside grpc_tools.
    includes = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = ["grpc_tools.protoc", "--proto_path=" + root, "--proto_path=" + includes,
            "--python_out=" + gen_root, "--pyi_out=" + gen_root,
            "--grpc_python_out=" + gen_root] + protos
    if protoc.main(args) != 0:
        raise RuntimeError("adaptd-client: protoc failed on %s" % ", ".join(protos))

    written = []
    for init in ("", "adapt", PROTO_PACKAGE):
        path = os.path.join(gen_root, init, "__init__.py")
        with open(path, "w") as f:
            f.write('"""Generated from adaptd\'s proto/ when the wheel was built."""\n')
        written.append(path)
    for path in sorted(glob.glob(os.path.join(gen_root, PROTO_PACKAGE, "*.py*"))):
        with open(path) as f:
            text = f.read()
        text = _ABSOLUTE_IMPORT.sub(r"from . import \1", text)
        if _ANY_ADAPT_IMPORT.search(text):
            raise RuntimeError("adaptd-client: %s still imports the top-level package adapt "
                               "after the rewrite" % path)
        with open(path, "w") as f:
            f.write(text)
        written.append(path)
    return gen_root, written


def _lower_bound(requirements, name):
    from packaging.requirements import Requirement
    from packaging.version import Version

    for line in requirements:
        requirement = Requirement(line)
        if requirement.name == name:
            bounds = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
            uppers = [Version(s.version) for s in requirement.specifier if s.operator == "<"]
            if bounds:
                return max(bounds), (min(uppers) if uppers else None)
    raise RuntimeError("adaptd-client: pyproject.toml declares no lower bound for %s" % name)


def check_versions(gen_root, requirements):
    """Fails the build when the generated code needs a grpcio or protobuf that the declared
    dependency ranges allow to be missing."""
    from packaging.version import Version

    with open(os.path.join(gen_root, PROTO_PACKAGE, "adapt_pb2_grpc.py")) as f:
        grpc_text = f.read()
    with open(os.path.join(gen_root, PROTO_PACKAGE, "adapt_pb2.py")) as f:
        pb_text = f.read()
    grpc_needed = re.search(r"GRPC_GENERATED_VERSION = '([^']+)'", grpc_text)
    pb_needed = re.search(r"ValidateProtobufRuntimeVersion\(\s*[\w.]+,\s*(\d+),\s*(\d+),\s*(\d+),",
                          pb_text)
    if not grpc_needed or not pb_needed:
        raise RuntimeError("adaptd-client: cannot read the versions the generated code needs")
    checks = (("grpcio", Version(grpc_needed.group(1)), None),
              ("protobuf", Version(".".join(pb_needed.groups())), int(pb_needed.group(1)) + 1))
    for name, needed, next_major in checks:
        lower, upper = _lower_bound(requirements, name)
        if lower < needed:
            raise RuntimeError("adaptd-client: the generated code needs %s>=%s but pyproject.toml "
                               "allows %s>=%s" % (name, needed, name, lower))
        if next_major is not None and (upper is None or upper > Version("%d" % next_major)):
            raise RuntimeError("adaptd-client: the generated code needs %s<%d (its major version)"
                               " but pyproject.toml allows %s" % (name, next_major, upper))


class BuildPyWithProtos(build_py):
    def run(self):
        super().run()
        # Editable installs read the package from the source tree: generate there (the folder
        # is ignored by git, see .gitignore).
        out_root = HERE if getattr(self, "editable_mode", False) else self.build_lib
        gen_root, _ = generate(out_root)
        check_versions(gen_root, self.distribution.install_requires or [])

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        gen_root = os.path.join(self.build_lib, GENERATED_PACKAGE)
        for folder, _, files in os.walk(gen_root):
            outputs.extend(os.path.join(folder, name) for name in files)
        return outputs


class SdistWithProtos(sdist):
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        target = os.path.join(base_dir, "proto", PROTO_PACKAGE)
        os.makedirs(target, exist_ok=True)
        for path in glob.glob(os.path.join(proto_root(), PROTO_PACKAGE, "*.proto")):
            shutil.copy2(path, target)


setup(cmdclass={"build_py": BuildPyWithProtos, "sdist": SdistWithProtos})
