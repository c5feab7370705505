"""A cluster of adaptd processes on loopback for the end-to-end tests: the cluster on etcd
(docs/CLUSTER_ETCD.md), over a 3-member etcd and SeaweedFS (bench/durable_log/services.py, the
binaries in ADAPTD_ETCD_BIN and ADAPTD_WEED_BIN), each member registering under its name at its
address. A store is served by the holder of its shard (fnv1a64(`tenant/store`) mod 4096),
which, once the cluster is settled, is the member the rendezvous weight of "shard-SSSS" names.

`static_owner` is the owner of a store in the static member list that came before it (docs/CLUSTER.md,
"Migration"), whose data directories `adaptctl cluster migrate` loads.
"""

import os
import sys

SHARDS = 4096
MASK = (1 << 64) - 1
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


# The weight of docs/CLUSTER_ETCD.md, "Shards", written from the document.
def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data.encode():
        h = ((h ^ b) * 0x100000001b3) & MASK
    return h


def fmix64(x):
    x ^= x >> 33
    x = (x * 0xff51afd7ed558ccd) & MASK
    x ^= x >> 33
    x = (x * 0xc4ceb9fe1a85ec53) & MASK
    x ^= x >> 33
    return x


def rotl64(x, r):
    return ((x << r) | (x >> (64 - r))) & MASK


def rendezvous(members, key):
    weights = [(fmix64(fnv1a64(m) ^ rotl64(fnv1a64(key), 17)), m) for m in members]
    best = max(w for w, _ in weights)
    return min(m for w, m in weights if w == best)


def owner_of(members, key):
    """The member serving the store `key` ("tenant/store") in a settled cluster."""
    return rendezvous(members, "shard-%04x" % (fnv1a64(key) % SHARDS))


def static_owner(members, key):
    """The owner of the store `key` in a static member list of `members`."""
    return rendezvous(members, key)


class Backing:
    """What a cluster needs beside its members: etcd and SeaweedFS."""

    def __init__(self, work, lease_ttl_s=2):
        self.etcd = self.weed = None
        self.lease_ttl_s = lease_ttl_s
        etcd_bin, weed_bin = os.environ.get("ADAPTD_ETCD_BIN"), os.environ.get("ADAPTD_WEED_BIN")
        if not etcd_bin or not weed_bin:
            raise RuntimeError("a cluster on etcd needs ADAPTD_ETCD_BIN and ADAPTD_WEED_BIN")
        sys.path.insert(0, os.path.join(ROOT, "bench", "durable_log"))
        import services  # the etcd and SeaweedFS the durable log's benchmark runs

        self.services = services
        try:
            self.etcd = services.Etcd(etcd_bin, work)
            self.weed = services.SeaweedFs(weed_bin, work)
        except BaseException:
            self.close()
            raise
        self.credentials = os.path.join(work, "s3-credentials")
        with open(self.credentials, "w") as f:
            f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
                    % (services.ACCESS_KEY, services.SECRET_KEY))

    def member_flags(self, name, address):
        """adaptd's flags that make it member `name` of the cluster, reached at `address`."""
        return ["--cluster-self", name, "--advertise-address", address,
                "--etcd-endpoints", ",".join(self.etcd.client_urls),
                "--etcd-lease-ttl", str(self.lease_ttl_s),
                "--snapshot-store", "s3://%s/e2e" % self.services.BUCKET,
                "--s3-endpoint", self.weed.endpoint, "--s3-credentials-file", self.credentials]

    def close(self):
        for service in (self.weed, self.etcd):
            if service is not None:
                service.close()
        self.etcd = self.weed = None
