# Sourced by the bench runners that start a fresh adaptd for each case; needs ADAPTCTL. Makes
# WORK, a scratch folder removed at exit (with any server still running).
# start_fresh_server ADAPTD [FLAGS...] starts ADAPTD on a free port of 127.0.0.1 with metrics
# off and a fresh data dir under WORK, sets ADDR and SERVER_PID, and returns once it answers
# (exits with the server's log otherwise); stop_fresh_server stops it.
WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [[ -n "$SERVER_PID" ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 1" INT TERM

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_fresh_server() {
  local adaptd="$1"
  shift
  ADDR="127.0.0.1:$(free_port)"
  rm -rf "$WORK/data"
  "$adaptd" --listen "$ADDR" --metrics-listen off --data-dir "$WORK/data" "$@" \
    2>"$WORK/adaptd.log" &
  SERVER_PID=$!
  for _ in $(seq 1 150); do
    if "$ADAPTCTL" --addr "$ADDR" encoders >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "adaptd did not start: $(cat "$WORK/adaptd.log")" >&2
  exit 1
}

stop_fresh_server() {
  kill "$SERVER_PID"
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}
