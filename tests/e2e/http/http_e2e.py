"""What the HTTP front end's end-to-end tests share: free ports, one HTTP call, raw bytes sent
and the answer read, a config with tokens, starting adaptd, waiting for its HTTP listener and
stopping it, length-delimited messages (ExportStore's and ImportStore's bodies)."""

import hashlib
import http.client
import json
import os
import socket
import subprocess
import time

BOUND_S = 30.0


_given_ports = set()


def free_port():
    """A loopback port free now and not given before by this process (the kernel can hand the
    same free port to two calls in a row)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _given_ports:
            _given_ports.add(port)
            return port


def call(port, verb, path, body=None, token=None, headers=None, chunked=False, tls=None):
    """One HTTP call to 127.0.0.1:port (HTTPS with the ssl.SSLContext `tls`): (status, the
    parsed JSON body, the response headers). A body that is not bytes, str or (when `chunked`,
    sent as Transfer-Encoding: chunked) an iterable of pieces is sent as JSON."""
    if tls is not None:
        connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=BOUND_S,
                                                 context=tls)
    else:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND_S)
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = "Bearer " + token
    if body is not None and not chunked and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    try:
        connection.request(verb, path, body=body, headers=sent, encode_chunked=chunked)
        response = connection.getresponse()
        raw = response.read()
        return response.status, json.loads(raw), dict(response.getheaders())
    finally:
        connection.close()


def raw_call(port, raw):
    """Sends `raw` bytes to 127.0.0.1:port and reads one answer whose body is a JSON object
    (the connection may stay open): (the head, the body), as bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=BOUND_S) as s:
        s.sendall(raw)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            got = s.recv(4096)
            if not got:
                break
            answer += got
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


def wait_ready(port, process, log, tls=None):
    """Waits until /readyz answers 200 (over HTTPS with the ssl.SSLContext `tls`); fails with
    the server's log if it exits or never does."""
    deadline = time.monotonic() + BOUND_S
    while True:
        try:
            if call(port, "GET", "/readyz", tls=tls)[0] == 200:
                return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            raise AssertionError("adaptd did not serve HTTP: " +
                                 log.read().decode(errors="replace"))
        time.sleep(0.05)


def token_config(directory, tokens):
    """Writes a config file giving each tenant of `tokens` (tenant: token) its token; its
    path."""
    config = {"tokens": [{"name": name, "sha256": hashlib.sha256(t.encode()).hexdigest(),
                          "tenants": [name]} for name, t in tokens.items()]}
    path = os.path.join(directory, "config.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return path


def start_adaptd(args, log):
    """adaptd with `args` (beside --metrics-listen off), its output to `log`."""
    return subprocess.Popen([os.environ["ADAPTD_BIN"], "--metrics-listen", "off"] + args,
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)


def stop(server):
    """SIGTERM, then SIGKILL if the server is not gone in BOUND_S."""
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=BOUND_S)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()


def varint(n):
    """n as a protobuf varint: 7 bits a byte, the lowest first."""
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def delimited(chunks):
    """The messages as ExportStore writes its chunks over HTTP: each a varint length, then
    the message."""
    out = b""
    for chunk in chunks:
        data = chunk.SerializeToString()
        out += varint(len(data)) + data
    return out


def undelimited(body, message_class):
    """The messages (of `message_class`) of a length-delimited body; fails on a malformed
    one."""
    chunks, at = [], 0
    while at < len(body):
        length, shift = 0, 0
        while True:
            byte = body[at]
            at += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        assert at + length <= len(body), "a truncated export"
        chunks.append(message_class.FromString(body[at:at + length]))
        at += length
    return chunks
