#!/usr/bin/env bash
# Makes a throw-away CA, a server certificate for 127.0.0.1 and localhost, and a client
# certificate, all signed by the CA, in the directory $1 (for the TLS tests).
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
subj() { echo "/CN=$1"; }
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout ca.key -out ca.pem \
  -subj "$(subj adaptd-test-ca)" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
  -subj "$(subj localhost)" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
  -extfile server.ext -out server.pem 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr \
  -subj "$(subj adaptd-test-client)" 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' > client.ext
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
  -extfile client.ext -out client.pem 2>/dev/null
# A second CA whose client certificate the server must refuse.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout rogue.key -out rogue.pem \
  -subj "$(subj rogue)" 2>/dev/null
