#!/usr/bin/env bash
# Starts adaptd with a scratch data dir and a config hosting all-MiniLM-L6-v2 (`minilm`,
# max_tokens 128) and a 384-wide identity encoder (`vec384`), runs few_shot_curve.py against it
# and stops the server.
#
#   ST_PYTHON=/path/to/venv/bin/python bash bench/quality/run_few_shot.sh [few_shot_curve.py args]
#
# ST_PYTHON: a Python with sentence-transformers (reference embeddings, LogisticRegression's
#   features), e.g. python3 -m venv /work/bench-work/stvenv &&
#   /work/bench-work/stvenv/bin/pip install sentence-transformers
# BUILD_DIR (default ./build): where server/adaptd, client/python and models/ are.
# WORK (default /work/bench-work/fewshot): scratch (data dir, config, server log, cache).
# PORT (default 50561). PYTHON (default /usr/bin/python3): has grpcio, protobuf, numpy,
#   scikit-learn. The data: Debian's `fortunes` package (apt-get install fortunes).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
work=${WORK:-/work/bench-work/fewshot}
port=${PORT:-50561}
python=${PYTHON:-/usr/bin/python3}
model=${MODEL:-$build_dir/models/all-MiniLM-L6-v2}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}

[ -d /usr/share/games/fortunes ] || { echo "install Debian's fortunes package first" >&2; exit 2; }
run_dir=$(mktemp -d "$work/run.XXXXXX")
cat > "$run_dir/config.json" <<EOF
{"encoders": [
  {"name": "minilm", "type": "sentence_bert", "model_path": "$model", "max_tokens": 128},
  {"name": "vec384", "type": "identity", "dim": 384}
]}
EOF
"$build_dir/server/adaptd" --config "$run_dir/config.json" --listen "127.0.0.1:$port" \
  --metrics-listen off --data-dir "$run_dir/data" --fsync off --workers 1 --backend-threads 1 \
  > "$run_dir/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT

PYTHONPATH=$build_dir/client/python:$root/client/python "$python" \
  "$root/bench/quality/few_shot_curve.py" --address "127.0.0.1:$port" --encoder minilm \
  --vector-encoder vec384 --model "$model" --max-tokens 128 --work "$work/cache" "$@"
echo "server log: $run_dir/server.log" >&2
