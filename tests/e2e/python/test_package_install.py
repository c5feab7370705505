#!/usr/bin/env python3
"""The installed adaptd-client package (pip install client/python), checked from the outside.

Run by the venv's python that `.ci/dev test` makes (python_package_install_e2e), with no
PYTHONPATH: the package must come from that venv's site-packages, carry its own generated
adapt.v1 modules (never the build tree's top-level `adapt`), its py.typed marker and type stubs,
declare dependency ranges that the installed grpcio and protobuf satisfy, and talk to the real
server.
"""

import importlib.metadata
import importlib.util
import os
import sys
import sysconfig
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from adaptd_process import AdaptdProcess, run_tests  # noqa: E402

import adaptd_client  # noqa: E402
from adaptd_client import Client  # noqa: E402

SERVER = None


def setUpModule():
    global SERVER
    SERVER = AdaptdProcess()
    SERVER.start()


def tearDownModule():
    if SERVER is not None:
        SERVER.stop()


def _inside(path, folder):
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder


class InstalledPackage(unittest.TestCase):
    def test_no_build_tree_on_the_path(self):
        self.assertNotIn("PYTHONPATH", os.environ, "the package test runs without PYTHONPATH")
        self.assertNotEqual(sys.prefix, sys.base_prefix, "runs inside a virtual environment")

    def test_imported_from_site_packages(self):
        site = sysconfig.get_paths()["purelib"]
        self.assertTrue(_inside(adaptd_client.__file__, site),
                        "%s is not under %s" % (adaptd_client.__file__, site))
        # Not the source tree's copy (the venv itself may live in a build folder of the repo).
        source = os.path.normpath(os.path.join(HERE, "..", "..", "..", "client", "python"))
        self.assertFalse(_inside(adaptd_client.__file__, source))

    def test_generated_modules_are_the_packages_own(self):
        from adaptd_client import _stubs
        from adaptd_client.proto import adapt_pb2

        self.assertEqual(_stubs.SOURCE, "package")
        self.assertEqual(adapt_pb2.__name__, "adaptd_client._gen.adapt.v1.adapt_pb2")
        self.assertIsNone(importlib.util.find_spec("adapt"),
                          "no top-level adapt package (the build tree's stubs) is importable")
        # proto3 `optional` survives generation: presence is tracked.
        params = adapt_pb2.FaastParams()
        self.assertFalse(params.HasField("ridge"))
        params.ridge = 0.0
        self.assertTrue(params.HasField("ridge"))
        # Every message file of proto/adapt/v1 is in the wheel, with its type stub.
        from adaptd_client._gen.adapt import v1

        generated = set(os.listdir(os.path.dirname(v1.__file__)))
        protos = os.path.join(HERE, "..", "..", "..", "proto", "adapt", "v1")
        for name in sorted(os.listdir(protos)):
            if name.endswith(".proto"):
                stem = name[:-len(".proto")]
                self.assertIn(stem + "_pb2.py", generated)
                self.assertIn(stem + "_pb2.pyi", generated)

    def test_typed_and_versioned(self):
        files = {str(f) for f in importlib.metadata.files("adaptd-client")}
        self.assertIn("adaptd_client/py.typed", files)
        self.assertIn("adaptd_client/_gen/adapt/v1/adapt_pb2_grpc.py", files)
        self.assertEqual(importlib.metadata.version("adaptd-client"), adaptd_client.__version__)

    def test_dependency_ranges_hold(self):
        from packaging.requirements import Requirement

        declared = {}
        for line in importlib.metadata.requires("adaptd-client"):
            requirement = Requirement(line)
            if requirement.marker is None:
                declared[requirement.name] = requirement.specifier
        self.assertEqual(sorted(declared), ["grpcio", "numpy", "protobuf"])
        for name, specifier in declared.items():
            installed = importlib.metadata.version(name)
            self.assertTrue(specifier.contains(installed, prereleases=True),
                            "%s %s outside %s" % (name, installed, specifier))
            self.assertTrue(any(s.operator == "<" for s in specifier), "%s has an upper bound"
                            % name)

    def test_talks_to_the_server(self):
        with Client(SERVER.address, timeout=10.0) as client:
            self.assertEqual(client.health(), "SERVING")
            client.ping()
            self.assertIn("identity", [e["name"] for e in client.encoders()])


if __name__ == "__main__":
    run_tests(lambda: SERVER)
