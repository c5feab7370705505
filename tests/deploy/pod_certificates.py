"""A pod's own certificate, as the chart's cert-manager Certificates describe it, served by adaptd
with the TLS flags the chart renders (for test_helm_chart.py).

- A throw-away CA (openssl) stands for the issuer and signs each Certificate's SANs and key
  usages, as cert-manager would; the Secrets' keys (tls.crt, tls.key, ca.crt) are laid out as
  the StatefulSet's projected volume maps them, under each pod's name.
- adaptd starts with the container's --tls-* arguments, `$(POD_NAME)` expanded to one pod's name
  as the kubelet expands it and /etc/adaptd/tls moved to that layout.
- A gRPC client (python3-grpcio) calls grpc.health.v1 over mutual TLS, presenting another pod's
  certificate as its client certificate, as a member does: it verifies when dialing the pod's
  advertised name and the Service's, and fails for another pod's name and without a client
  certificate.

Runs where ADAPTD_BIN is set (the rest of the chart test needs no binary).
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time

# cert-manager's usages as openssl's extended key usages.
EXTENDED_USAGES = {"server auth": "serverAuth", "client auth": "clientAuth"}


def openssl(work, *args):
    subprocess.run(["openssl"] + list(args), cwd=work, check=True, capture_output=True)


def new_key_args(key):
    return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key]


def issue(work, cert):
    """Signs the Certificate's SANs and usages with the CA in `work`: the Secret's keys, as
    {key: file in work}."""
    name = cert["metadata"]["name"]
    spec = cert["spec"]
    with open(os.path.join(work, name + ".ext"), "w") as f:
        f.write("subjectAltName=%s\nextendedKeyUsage=%s\n" % (
            ",".join("DNS:" + d for d in spec["dnsNames"]),
            ",".join(EXTENDED_USAGES[u] for u in spec["usages"] if u in EXTENDED_USAGES)))
    openssl(work, "req", *new_key_args(name + ".key"), "-out", name + ".csr", "-subj", "/CN=" + name)
    openssl(work, "x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", name + ".ext", "-out", name + ".crt")
    return {"tls.crt": name + ".crt", "tls.key": name + ".key", "ca.crt": "ca.crt"}


def project(work, volume, secrets):
    """The projected volume's files under work/tls, as the kubelet writes them."""
    root = os.path.join(work, "tls")
    for source in volume["projected"]["sources"]:
        files = secrets[source["secret"]["name"]]
        for item in source["secret"]["items"]:
            path = os.path.join(root, item["path"])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            shutil.copy(os.path.join(work, files[item["key"]]), path)
    return root


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def health(port, root, name, client=None):
    """grpc.health.v1 Check over TLS dialing `name`, presenting `client`'s certificate (a pod's
    directory under root): None when it answers, else the status code."""
    import grpc  # python3-grpcio

    def read(path):
        with open(path, "rb") as f:
            return f.read()

    creds = grpc.ssl_channel_credentials(
        root_certificates=read(os.path.join(root, client or os.listdir(root)[0], "ca.crt")),
        private_key=read(os.path.join(root, client, "tls.key")) if client else None,
        certificate_chain=read(os.path.join(root, client, "tls.crt")) if client else None)
    with grpc.secure_channel("127.0.0.1:%d" % port, creds,
                             options=[("grpc.ssl_target_name_override", name)]) as channel:
        check_call = channel.unary_unary("/grpc.health.v1.Health/Check")
        try:
            check_call(b"", timeout=10)
            return None
        except grpc.RpcError as error:
            return error.code()


def serve(binary, work, flags):
    """adaptd on a free loopback port with `flags`: (process, port, log path) once it serves, or
    (None, 0, log path) when it exits or does not serve within 60 s."""
    port = free_port()
    log_path = os.path.join(work, "adaptd.log")
    with open(log_path, "w") as log:
        p = subprocess.Popen([binary, "--listen", "127.0.0.1:%d" % port, "--metrics-listen", "off",
                              "--http-listen", "127.0.0.1:0",
                              "--data-dir", os.path.join(work, "data")] + flags,
                             stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while p.poll() is None and time.monotonic() < deadline:
        with open(log_path) as f:
            if any(line.startswith("adaptd: serving gRPC") for line in f):
                return p, port, log_path
        time.sleep(0.05)
    if p.poll() is None:
        p.terminate()
        p.wait(timeout=10)
    return None, 0, log_path


def check(docs, by_kind, container, check_fn, work_dir):
    """The checks above on the rendered etcd-tls manifests; failures go to check_fn."""
    binary = os.environ.get("ADAPTD_BIN")
    if not binary:
        return
    k = by_kind(docs)
    volume = next(v for v in k["StatefulSet"][0]["spec"]["template"]["spec"]["volumes"]
                  if v["name"] == "tls")
    work = tempfile.mkdtemp(prefix="pod-certs-", dir=work_dir)
    openssl(work, "req", "-x509", *new_key_args("ca.key"), "-days", "2", "-out", "ca.crt",
            "-subj", "/CN=adaptd-test-issuer")
    secrets = {c["spec"]["secretName"]: issue(work, c) for c in k["Certificate"]}
    root = project(work, volume, secrets)
    pod, other = "demo-adaptd-1", "demo-adaptd-2"
    flags = [a.replace("$(POD_NAME)", pod).replace("/etc/adaptd/tls", root)
             for a in container(docs)["args"] if a.startswith("--tls-")]
    p, port, log_path = serve(binary, work, flags)
    try:
        if not check_fn(p is not None, "pod certificates: adaptd did not serve with %s: %s"
                        % (flags, open(log_path).read())):
            return
        advertised = "%s.demo-adaptd-headless.ml.svc.cluster.local" % pod
        for name in (advertised, "demo-adaptd.ml.svc"):
            code = health(port, root, name, client=other)
            check_fn(code is None, "pod certificates: %s over mutual TLS with %s's certificate: %s"
                     % (name, other, code))
        code = health(port, root, "%s.demo-adaptd-headless.ml.svc.cluster.local" % other,
                      client=other)
        check_fn(code is not None, "pod certificates: %s's certificate verified as %s's" %
                 (pod, other))
        code = health(port, root, advertised)
        check_fn(code is not None, "pod certificates: a call without a client certificate was "
                 "answered (mutual TLS not required)")
    finally:
        if p is not None:
            p.terminate()
            p.wait(timeout=10)
