#!/usr/bin/env bash
# Break the docker compose cluster on purpose and report what it kept:
#   deploy/break.sh                  # every experiment
#   deploy/break.sh kill-primary     # one (see: go run ./cmd/faults --list)
# Each experiment starts the cluster fresh (project "iggyfaults", its
# volumes deleted), runs a writer through the Go SDK, injects the fault with
# docker (or changes the roster: grow-3-to-5, shrink-5-to-3,
# replace-a-dead-host start the joiners of the compose profile "reconfig"),
# heals it, checks every replica, and tears the cluster down.
# Reports: deploy/reports/<experiment>.txt, .json and .nodes.log.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/build.sh
exec go run ./cmd/faults --out deploy/reports "$@"
