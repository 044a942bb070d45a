#!/usr/bin/env bash
# Builds the iggynode image FROM scratch out of static binaries compiled
# here (no registry is needed or used): deploy/build.sh [tag]
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-iggynode:local}"
out=deploy/.build
rm -rf "$out" && mkdir -p "$out/data"
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$out/iggynode" ./cmd/node
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$out/iggy" ./cmd/iggy
# The nodes' log folders, bind-mounted by docker-compose.yml: the image
# runs as uid 10001, which must be able to write them.
# node3, node4 and node1b are the joiners of the compose profile "reconfig".
for n in node0 node1 node2 node3 node4 node1b; do
  mkdir -p "deploy/telemetry/$n" && chmod 0777 "deploy/telemetry/$n"
done
docker build -q -f deploy/Dockerfile -t "$tag" "$out"
echo "built $tag"
