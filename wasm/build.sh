#!/usr/bin/env bash
# Builds the sandbox's guest (wasm/guest) into wasm/guest.wasm, or into
# the file named by $1, reproducibly: the same Go toolchain and sources
# give the same bytes (TestGuestUpToDate holds the committed guest.wasm
# to that). Run it after changing wasm/guest or wasm/internal/hbs.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-wasm/guest.wasm}"
env GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS= GOWORK=off GOEXPERIMENT= \
	go build -trimpath -buildvcs=false -buildmode=c-shared \
	-ldflags='-s -w -buildid=' -o "$out" ./wasm/guest
