"""What the HTTP front end's end-to-end tests share: free ports, one HTTP call, raw bytes sent
and the answer read, waiting for a server's HTTP listener."""

import http.client
import json
import socket
import time

BOUND_S = 30.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(port, verb, path, body=None, token=None, headers=None):
    """One HTTP call to 127.0.0.1:port: (status, the parsed JSON body, the response headers).
    A body that is not bytes or str is sent as JSON."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND_S)
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = "Bearer " + token
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    try:
        connection.request(verb, path, body=body, headers=sent)
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


def wait_ready(port, process, log):
    """Waits until /readyz answers 200; fails with the server's log if it exits or never does."""
    deadline = time.monotonic() + BOUND_S
    while True:
        try:
            if call(port, "GET", "/readyz")[0] == 200:
                return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            raise AssertionError("adaptd did not serve HTTP: " +
                                 log.read().decode(errors="replace"))
        time.sleep(0.05)
