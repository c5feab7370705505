"""The processes the durable log benchmark runs against, on loopback: a 3-member etcd (each
member with its own data directory), SeaweedFS with its S3 gateway and one identity, and adaptd
with either durability. Flags as the C++ test harnesses start them
(server/etcd/testing/etcd_cluster.cc, server/objstore/testing/seaweedfs.cc), except that etcd
keeps its default heartbeat and election timeout. Every child is started here and stopped by
its own process id.

Also the read-outs the figures need: etcd's Maintenance Status and key counts through its JSON
gateway (/v3/...), and object counts through S3's ListObjectsV2 (curl's AWS SigV4).
"""

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET

from adaptd_client import Client

ACCESS_KEY = "adaptdbenchkey"
SECRET_KEY = "adaptd-bench-secret-0123456789"
BUCKET = "adaptd-bench"


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def stop(process, grace=30.0):
    """SIGTERM, then SIGKILL past `grace` seconds; returns the seconds the exit took."""
    if process.poll() is not None:
        return 0.0
    begin = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return time.monotonic() - begin


def kill(process):
    if process.poll() is None:
        process.kill()
        process.wait()


START_TRIES = 4


def start_until_ports_hold(start, close, what):
    """Calls start(attempt), which answers None once the service is up and otherwise why not,
    with `close` between tries: a port found free can be taken by another process before the
    service binds it (tests start side by side), and then it starts again on new ports, at most
    START_TRIES times. Any other failure ends the test run, naming `what`."""
    for attempt in range(START_TRIES):
        outcome = start(attempt)
        if outcome is None:
            return
        close()
        if "address already in use" not in outcome or attempt == START_TRIES - 1:
            sys.exit("%s did not start: %s" % (what, outcome))


class Etcd:
    """Three etcd members on loopback, each with its own data directory under `work`.

    Started again on new ports when one was taken (start_until_ports_hold). A member counts as
    up only when the etcd answering at its client URL is the one started here (its peer URL),
    never another test's etcd that took the port first."""

    def __init__(self, binary, work):
        self.processes = []
        start_until_ports_hold(lambda attempt: self._start(binary, work, attempt), self.close,
                               "etcd (logs under %s)" % work)

    def _start(self, binary, work, attempt):
        """None once every member answers as itself and a leader is elected, else why not."""
        self.processes = []
        ports = free_ports(6)
        self.client_urls = ["http://127.0.0.1:%d" % ports[2 * i] for i in range(3)]
        self.peer_urls = ["http://127.0.0.1:%d" % ports[2 * i + 1] for i in range(3)]
        cluster = ",".join("m%d=%s" % (i, self.peer_urls[i]) for i in range(3))
        token = "adaptd-%d-%d-%d" % (os.getpid(), id(self), attempt)
        logs = [os.path.join(work, "etcd-m%d.%d.log" % (i, attempt)) for i in range(3)]
        for i in range(3):
            data = os.path.join(work, "etcd-m%d.%d" % (i, attempt))
            with open(logs[i], "wb") as log:
                self.processes.append(subprocess.Popen(
                    [binary, "--name", "m%d" % i, "--data-dir", data,
                     "--listen-client-urls", self.client_urls[i],
                     "--advertise-client-urls", self.client_urls[i],
                     "--listen-peer-urls", self.peer_urls[i],
                     "--initial-advertise-peer-urls", self.peer_urls[i],
                     "--initial-cluster", cluster, "--initial-cluster-state", "new",
                     "--initial-cluster-token", token, "--logger", "zap",
                     "--log-outputs", "stderr"],
                    stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for i, process in enumerate(self.processes):
                if process.poll() is not None:
                    with open(logs[i], errors="replace") as log:
                        return "m%d exited: %s" % (i, log.read()[-2000:])
            try:
                if all(self._answers_as_itself(i) for i in range(3)):
                    return None
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.2)
        return "no leader elected within 60 s"

    def _answers_as_itself(self, i):
        status = self.post(self.client_urls[i], "/v3/maintenance/status", {})
        if status.get("leader") in (None, "0"):
            return False
        me = status["header"]["member_id"]
        members = self.post(self.client_urls[i], "/v3/cluster/member/list", {})["members"]
        return any(m.get("ID") == me and self.peer_urls[i] in m.get("peerURLs", [])
                   for m in members)

    def post(self, url, path, body):
        request = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as answer:
            return json.loads(answer.read())

    def status(self):
        """Each member's Maintenance Status (dbSize, dbSizeInUse, leader, raftIndex, ...)."""
        return [self.post(url, "/v3/maintenance/status", {}) for url in self.client_urls]

    def count(self, prefix):
        """Keys under `prefix` (a count-only range read)."""
        key = prefix.encode()
        end = key[:-1] + bytes([key[-1] + 1])
        answer = self.post(self.client_urls[0], "/v3/kv/range", {
            "key": base64.b64encode(key).decode(), "range_end": base64.b64encode(end).decode(),
            "count_only": True})
        return int(answer.get("count", 0))

    def close(self):
        for p in self.processes:
            kill(p)


class SeaweedFs:
    """`weed server` with its S3 gateway, one identity (every request signed), one bucket."""

    def __init__(self, binary, work):
        self.dir = os.path.join(work, "seaweedfs")
        os.makedirs(os.path.join(self.dir, "data"))
        with open(os.path.join(self.dir, "s3.json"), "w") as f:
            json.dump({"identities": [{"name": "adaptd", "credentials": [
                {"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)
        start_until_ports_hold(lambda attempt: self._start(binary, attempt), self.close,
                               "SeaweedFS")

    def _start(self, binary, attempt):
        """None once the bucket is made, else why not."""
        p = free_ports(8)
        self.endpoint = "http://127.0.0.1:%d" % p[6]
        d = self.dir
        log_path = os.path.join(d, "weed.%d.log" % attempt)
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                [binary, "server", "-dir=%s/data" % d, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                 "-master.port=%d" % p[0], "-master.port.grpc=%d" % p[1],
                 "-master.volumeSizeLimitMB=64", "-master.electionTimeout=1s",
                 "-volume.port=%d" % p[2], "-volume.port.grpc=%d" % p[3], "-volume.max=0",
                 "-volume.preStopSeconds=0", "-filer", "-filer.port=%d" % p[4],
                 "-filer.port.grpc=%d" % p[5], "-filer.localSocket=%s/filer.sock" % d, "-s3",
                 "-s3.port=%d" % p[6], "-s3.port.grpc=%d" % p[7],
                 "-s3.localSocket=%s/s3.sock" % d, "-s3.port.iceberg=0", "-s3.port.lance=0",
                 "-s3.config=%s/s3.json" % d],
                stdout=log, stderr=subprocess.STDOUT)
        # The bucket, once S3 answers (its first volume may take a few seconds), and only while
        # this process runs (another one answering at a port it could not take is not it).
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            code = self.s3("PUT", "/" + BUCKET)[0]
            if self.process.poll() is not None:
                with open(log_path, errors="replace") as log:
                    return "weed exited: %s" % log.read()[-2000:]
            if code in (200, 409):
                return None
            time.sleep(0.5)
        return "no bucket within 90 s (log: %s)" % log_path

    def s3(self, method, path):
        """(HTTP status, body) of one signed S3 request; status 0 when nothing answered."""
        out = subprocess.run(
            ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "-X", method, "--max-time", "10",
             "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "%s:%s" % (ACCESS_KEY, SECRET_KEY),
             self.endpoint + path], capture_output=True, text=True)
        body, _, code = out.stdout.rpartition("\n")
        return (int(code) if code.isdigit() else 0), body

    def count(self, prefix):
        """(objects, bytes) under `prefix` in the bucket (ListObjectsV2, every page)."""
        ns = "{http://s3.amazonaws.com/doc/2006-03-01/}"
        objects = size = 0
        token = ""
        while True:
            query = "list-type=2&max-keys=1000&prefix=" + urllib.parse.quote(prefix, safe="")
            if token:
                query += "&continuation-token=" + urllib.parse.quote(token, safe="")
            code, body = self.s3("GET", "/%s?%s" % (BUCKET, query))
            if code != 200:
                raise OSError("ListObjectsV2: HTTP %d %s" % (code, body[:200]))
            root = ET.fromstring(body)
            for c in root.iter(ns + "Contents"):
                objects += 1
                size += int(c.find(ns + "Size").text)
            token = root.findtext(ns + "NextContinuationToken") or ""
            if root.findtext(ns + "IsTruncated") != "true" or not token:
                return objects, size

    def close(self):
        stop(self.process, grace=20)


class Adaptd:
    """One adaptd on a free port: `local` (the data directory's WAL, fsync on: the default) or
    `etcd` (the durable log in `etcd` under `prefix`, objects in the bucket under `prefix`)."""

    def __init__(self, binary, data_dir, log_path, mode, etcd=None, s3=None, prefix=""):
        self.address = "127.0.0.1:%d" % free_ports(1)[0]
        args = [binary, "--listen", self.address, "--metrics-listen", "off",
                "--data-dir", data_dir]
        env = dict(os.environ)
        if mode == "etcd":
            args += ["--etcd-endpoints", ",".join(etcd.client_urls),
                     "--etcd-prefix", "/%s/" % prefix,
                     "--snapshot-store", "s3://%s/%s" % (BUCKET, prefix),
                     "--s3-endpoint", s3.endpoint]
            env.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
        self.log_path = log_path
        self.started = time.monotonic()
        self.process = subprocess.Popen(args, env=env, stdout=open(log_path, "ab"),
                                        stderr=subprocess.STDOUT)

    def wait_serving(self, limit=300.0):
        """Seconds from the exec until grpc.health answers SERVING (a new channel each probe,
        so that no connection backoff delays the answer)."""
        deadline = self.started + limit
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                sys.exit("adaptd exited: " + open(self.log_path, errors="replace").read()[-3000:])
            with Client(self.address, timeout=0.5, retry=None) as probe:
                try:
                    if probe.health() == "SERVING":
                        return time.monotonic() - self.started
                except Exception:  # not serving yet
                    pass
            time.sleep(0.02)
        kill(self.process)
        sys.exit("adaptd did not serve within %.0f s (log: %s)" % (limit, self.log_path))

    def client(self, timeout=60.0):
        return Client(self.address, timeout=timeout)

    def stop(self):
        return stop(self.process, grace=120)

    def kill(self):
        kill(self.process)
