#!/usr/bin/python3
"""Checks that every server source includes only its own layer and the layers below it
(docs/ARCHITECTURE.md, "Layers"), and prints the count of upward includes (the goal is 0).

Layers, lowest first. Folders of one layer are peers and may include each other.
  0  server/base
  1  server/stores, encoders, persistence, metrics, quota, auth, config, scheduler, etcd and
     objstore (the clients of etcd and of object storage), and the cluster's pure part (server/cluster/membership.h, routing.h: the adaptd_cluster library)
  1.5 server/durability (the durability interface and its implementations, over persistence)
  2  server/core
  3  server/cluster (the rest: forwarding, member calls, hand-off, quotas and bases across members)
  4  server/service
  5  server/rpc and server/http (the gRPC and HTTP/JSON front ends, peers)
  6  server/main.cc
Tests (*_test.cc, *test_util*.h, the store and durability contract suites,
server/persistence/testing) may
drive a lower layer through a higher one and are not checked.

It also counts the places outside server/stores/ (tests left out) that name a built-in store
kind (STORE_KIND_<NAME> other than UNSPECIFIED, or a kind's params or stats field such as
`.faast()` or `has_falcon()`): kinds answer through their StoreKind hooks, so the goal is 0
and one fails the check (docs/ARCHITECTURE.md, "Store kinds").

Usage: check_layers.py [ROOT]
"""
import pathlib
import re
import sys

LAYERS = {
    "base": 0,
    "stores": 1, "encoders": 1, "persistence": 1, "metrics": 1, "quota": 1, "auth": 1,
    "config": 1, "scheduler": 1, "etcd": 1, "objstore": 1,
    "durability": 1.5,
    "core": 2,
    "cluster": 3,
    "service": 4,
    "rpc": 5, "http": 5,
}
PURE_CLUSTER = {"server/cluster/membership.h", "server/cluster/membership.cc",
                "server/cluster/routing.h"}
INCLUDE = re.compile(r'^#include "(server/[^"]+)"', re.M)
KIND_VALUE = re.compile(r"^\s*STORE_KIND_([A-Z0-9_]+)\s*=", re.M)


def kind_branch_pattern(root):
    """A regular expression matching a mention of one of the kinds adapt.proto lists."""
    proto = (root / "proto" / "adapt" / "v1" / "adapt.proto").read_text()
    names = [n.lower() for n in KIND_VALUE.findall(proto) if n != "UNSPECIFIED"]
    alternatives = "|".join(names)
    return re.compile(r"STORE_KIND_(?:%s)\b|\b(?:has_)?(?:%s)\(\)"
                      % ("|".join(n.upper() for n in names), alternatives))


def layer(path):
    if path in PURE_CLUSTER:
        return 1
    parts = path.split("/")
    if len(parts) == 2:  # server/main.cc
        return 6
    return LAYERS.get(parts[1])


def is_test(path):
    name = path.rsplit("/", 1)[-1]
    return (name.endswith("_test.cc") or "test_util" in name or name in ("store_contract.h", "durability_contract.h")
            or "/testing/" in path)


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    kind_branch = kind_branch_pattern(root)
    upward = []
    branches = []
    for file in sorted((root / "server").rglob("*")):
        if file.suffix not in (".h", ".cc"):
            continue
        path = file.relative_to(root).as_posix()
        if is_test(path):
            continue
        own = layer(path)
        if own is None:
            upward.append("%s: a folder with no layer (add it to .ci/check_layers.py)" % path)
            continue
        text = file.read_text()
        for included in INCLUDE.findall(text):
            theirs = layer(included)
            if theirs is None or theirs > own:
                upward.append("%s includes %s" % (path, included))
        if not path.startswith("server/stores/"):
            for number, line in enumerate(text.splitlines(), 1):
                if kind_branch.search(line):
                    branches.append("%s:%d: %s" % (path, number, line.strip()))
    for line in upward:
        print("upward include: " + line, file=sys.stderr)
    for line in branches:
        print("a store kind named outside server/stores: " + line, file=sys.stderr)
    print("layers: %d upward include(s); %d place(s) outside server/stores name a store kind"
          % (len(upward), len(branches)))
    return 1 if upward or branches else 0


if __name__ == "__main__":
    sys.exit(main())
