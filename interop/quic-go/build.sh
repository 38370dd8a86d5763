#!/usr/bin/env bash
# Builds the quic-go peer (this folder: quic-go v0.65.0, pinned in go.mod
# and go.sum) into DIR as quic-go-peer, and links the names the matrix
# and the comparison run it under: quic-go-hq, quic-go-h3-server,
# quic-go-h3-client, quic-go-server, quic-go-client.
#
#   interop/quic-go/build.sh interop/target/release
#
# Without Go on the PATH it says so in one line and exits 0, building
# nothing: the runners then leave quic-go out.
set -euo pipefail
dir="${1:?usage: build.sh DIR}"
if ! command -v go >/dev/null 2>&1; then
    echo "quic-go peer not built: no \`go\` on the PATH (Go 1.26 builds it; the matrix and the comparison leave quic-go out)" >&2
    exit 0
fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
cd "$(dirname "$0")"
# go.sum is the lock: -mod=readonly fails rather than change it.
go build -mod=readonly -trimpath -o "$dir/quic-go-peer" .
for name in quic-go-hq quic-go-h3-server quic-go-h3-client quic-go-server quic-go-client; do
    ln -sf quic-go-peer "$dir/$name"
done
