#!/bin/bash
# rounds.sh N "BIN VARIANT" ...: N rounds alternating the variants, one
# line per run: BIN VARIANT MB/s p50 µs node-CPU s. BIN names /tmp/iggynode.BIN.
# Read the output with stats.py.
cd "$(dirname "$0")"
n=$1; shift
variants=("$@")
for _ in $(seq "$n"); do for v in "${variants[@]}"; do
	read -r bin var <<<"$v"
	out=$(BIN=/tmp/iggynode.$bin ./run.sh "$var")
	echo "$bin $var $(echo "$out" | head -1 | grep -o '[0-9.]* MB/s') p50 $(echo "$out" | grep -o 'p50 [0-9.]*' | cut -d' ' -f2) node $(echo "$out" | grep -o 'node cpu [0-9.]*' | cut -d' ' -f3)"
done; done
