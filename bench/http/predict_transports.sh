#!/usr/bin/env bash
# Predict over gRPC, over HTTP/JSON (POST /v1/Predict) and over the Open Inference Protocol
# (POST /v2/models/TENANT/STORE/infer, JSON tensors) on one adaptd, the same call each time:
# a faast store of d = 64 and 8 labels, one input per request, top_k 1. One load generator,
# h2load (Debian's nghttp2-client), drives all three: HTTP/2 with a prebuilt gRPC frame for
# gRPC, `--h1` for HTTP/1.1; CLIENTS connections, one request in flight each (-m 1). The
# transports alternate for ROUNDS rounds; each run's req/s is h2load's, and p50/p99 come from
# its per-request log. Prints a Markdown table: each round, the median, and the ratios to gRPC.
#
#   bench/http/predict_transports.sh [ADAPTD_BIN]     (default build/server/adaptd)
#   env: CLIENTS (64), REQUESTS a run (20000), ROUNDS (3), WARMUP requests a run (2000)
set -euo pipefail
bin=${1:-build/server/adaptd}
clients=${CLIENTS:-64}
requests=${REQUESTS:-20000}
rounds=${ROUNDS:-3}
warmup=${WARMUP:-2000}
command -v h2load >/dev/null || { echo "h2load missing: apt-get install nghttp2-client" >&2; exit 1; }
work=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
grpc_port=$(free_port)
http_port=$(free_port)
"$bin" --listen "127.0.0.1:$grpc_port" --http-listen "127.0.0.1:$http_port" --metrics-listen off \
  --data-dir "$work/data" >"$work/adaptd.log" 2>&1 &
server=$!

# The store, and the three bodies of the same request; the gRPC frame checked to answer OK.
python3 - "$http_port" "$grpc_port" "$work" <<'PY'
import http.client, json, random, struct, sys, time
port, grpc_port, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
D, LABELS = 64, ["l%d" % i for i in range(8)]
def call(path, body):
    for _ in range(200):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
            assert r.status == 200, (path, r.status, data)
            return json.loads(data)
        except ConnectionRefusedError:
            time.sleep(0.1)
    raise SystemExit("adaptd did not serve HTTP")
rng = random.Random(1)
call("/v1/CreateStore", {"tenant": "bench", "store": "s",
                         "spec": {"kind": "STORE_KIND_FAAST", "dim": D}})
examples = []
for i in range(800):
    label = i % len(LABELS)
    v = [rng.gauss(0, 1) + (2.0 if j % len(LABELS) == label else 0.0) for j in range(D)]
    examples.append({"input": {"vector": {"values": v}}, "label": LABELS[label]})
call("/v1/Adapt", {"tenant": "bench", "store": "s", "examples": examples})
call("/v1/Compile", {"tenant": "bench", "store": "s"})
x = [round(rng.gauss(0, 1), 6) for _ in range(D)]
predict = {"tenant": "bench", "store": "s", "top_k": 1, "inputs": [{"vector": {"values": x}}]}
assert call("/v1/Predict", predict)["predictions"][0]["labels"][0]["label"] in LABELS
open(work + "/predict.json", "w").write(json.dumps(predict))
infer = {"inputs": [{"name": "INPUT", "datatype": "FP32", "shape": [1, D], "data": x}],
         "outputs": [{"name": "labels", "parameters": {"classification": 1}}]}
assert call("/v2/models/bench/s/infer", infer)["outputs"][0]["data"][0] in LABELS
open(work + "/infer.json", "w").write(json.dumps(infer))
# adapt.v1.PredictRequest by hand: tenant (1), store (2), inputs (3: Input.vector (1):
# FloatVector.values (1, packed)), top_k (4); then gRPC's frame: flag 0, big-endian length.
def field(n, payload):
    out, length = bytes([n << 3 | 2]), len(payload)
    while True:
        out += bytes([(length & 0x7F) | (0x80 if length > 0x7F else 0)])
        length >>= 7
        if not length:
            return out + payload
values = field(1, struct.pack("<%df" % D, *x))
message = (field(1, b"bench") + field(2, b"s") + field(3, field(1, values)) + bytes([4 << 3, 1]))
open(work + "/predict.grpc", "wb").write(b"\0" + struct.pack(">I", len(message)) + message)
try:
    import grpc
    channel = grpc.insecure_channel("127.0.0.1:%d" % grpc_port)
    answer = channel.unary_unary("/adapt.v1.Adaptation/Predict")(message, timeout=30)
    assert b"l" in answer, answer
except ImportError:
    pass
PY

run() {  # transport, requests, log file: prints "req/s p50_us p99_us"
  local t=$1 n=$2 log=$3 out
  case "$t" in
    grpc) out=$(h2load -n "$n" -c "$clients" -m 1 -d "$work/predict.grpc" \
                  -H 'content-type: application/grpc' -H 'te: trailers' --log-file "$log" \
                  "http://127.0.0.1:$grpc_port/adapt.v1.Adaptation/Predict") ;;
    http) out=$(h2load --h1 -n "$n" -c "$clients" -m 1 -d "$work/predict.json" \
                  -H 'content-type: application/json' --log-file "$log" \
                  "http://127.0.0.1:$http_port/v1/Predict") ;;
    oip) out=$(h2load --h1 -n "$n" -c "$clients" -m 1 -d "$work/infer.json" \
                  -H 'content-type: application/json' --log-file "$log" \
                  "http://127.0.0.1:$http_port/v2/models/bench/s/infer") ;;
  esac
  echo "$out" | grep -q "requests: $n total, $n started, $n done, $n succeeded, 0 failed" ||
    { echo "$t: not every request succeeded:" >&2; echo "$out" >&2; exit 1; }
  python3 - "$log" "$(echo "$out" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p')" <<'PY'
import sys
durations = sorted(int(line.split()[2]) for line in open(sys.argv[1]) if line.strip())
pick = lambda q: durations[min(len(durations) - 1, int(q * len(durations)))]
print(sys.argv[2], pick(0.50), pick(0.99))
PY
}

transports=(grpc http oip)
for t in "${transports[@]}"; do run "$t" "$warmup" "$work/warm.log" >/dev/null; done
for r in $(seq 1 "$rounds"); do
  for t in "${transports[@]}"; do echo "$t $(run "$t" "$requests" "$work/$t.$r.log")"; done
done >"$work/results"
python3 - "$work/results" "$clients" "$requests" "$rounds" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    t, rps, p50, p99 = line.split()
    rows[t].append((float(rps), int(p50), int(p99)))
median = {t: [statistics.median(v[i] for v in runs) for i in range(3)] for t, runs in rows.items()}
names = {"grpc": "gRPC Predict", "http": "HTTP/JSON /v1/Predict", "oip": "OIP infer (JSON)"}
print("%s clients, %s requests a run, %s rounds alternated" % tuple(sys.argv[2:5]))
print()
print("| transport | req/s each round | median req/s | p50 ms | p99 ms | / gRPC |")
print("| --- | --- | --- | --- | --- | --- |")
for t, runs in rows.items():
    m = median[t]
    print("| %s | %s | %s | %.2f | %.2f | %.2f |" % (
        names[t], " · ".join("{:,.0f}".format(r[0]) for r in runs), "{:,.0f}".format(m[0]),
        m[1] / 1000, m[2] / 1000, m[0] / median["grpc"][0]))
PY
