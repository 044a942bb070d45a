#!/bin/bash
# run.sh VARIANT [bench args...]: one telemetry-overhead run (docs/benchmarks.md
# "Telemetry overhead"). Starts the node $BIN (default /tmp/iggynode) with a
# fresh data folder and VARIANT's telemetry (off | metrics | tracing) on
# 127.0.0.1:18091, runs $BENCH (default /tmp/bench) with one producer and
# small sends, prints the bench's figures and the node's CPU seconds, stops
# the node. WORK (default /tmp/telab) holds data, configs and node logs.
set -u
v=$1; shift
BIN=${BIN:-/tmp/iggynode} BENCH=${BENCH:-/tmp/bench} WORK=${WORK:-/tmp/telab}
mkdir -p "$WORK" && rm -rf "$WORK/data-$v"
cfg=$WORK/$v.toml
cat > "$cfg" <<TOML
[system]
path = "$WORK/data-$v"
[system.logging]
level = "warn"
[tcp]
address = "127.0.0.1:18091"
[quic]
enabled = false
[websocket]
enabled = false
TOML
case $v in
off) printf '[telemetry.metrics]\nenabled = false\n' >> "$cfg" ;;
metrics) ;;
tracing) printf '[telemetry]\nenabled = true\n[telemetry.logs]\nexporter = "none"\n[telemetry.traces]\nexporter = "file"\nsample_ratio = 1.0\n' >> "$cfg" ;;
*) echo "variant: off | metrics | tracing" >&2; exit 2 ;;
esac
"$BIN" --config "$cfg" ${NODEARGS:-} > "$WORK/node-$v.log" 2>&1 &
pid=$!
for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/18091) 2>/dev/null && break; sleep 0.1; done
"$BENCH" --address 127.0.0.1:18091 --producers 1 --messages-per-batch 10 --message-size 1000 --batches "${BATCHES:-60000}" "$@" 2>&1 | grep "MB/s" | head -2
echo "node cpu $(awk '{printf "%.2f s", ($14+$15)/100}' /proc/$pid/stat)"
kill $pid; wait $pid
