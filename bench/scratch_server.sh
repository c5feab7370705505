# Sourced by the bench runners: start_scratch_server WORK PORT starts adaptd from $build_dir on
# 127.0.0.1:PORT (one worker, one backend thread, --fsync off, no metrics) with a fresh data
# dir under WORK, sets run_dir, and stops the server when the calling script exits.
start_scratch_server() {
  mkdir -p "$1"
  run_dir=$(mktemp -d "$1/run.XXXXXX")
  "$build_dir/server/adaptd" --listen "127.0.0.1:$2" --metrics-listen off \
    --data-dir "$run_dir/data" --fsync off --workers 1 --backend-threads 1 \
    > "$run_dir/server.log" 2>&1 &
  scratch_server=$!
  trap 'kill "$scratch_server" 2>/dev/null; wait "$scratch_server" 2>/dev/null || true' EXIT
}
