#!/usr/bin/env bash
# The interop matrix, one command: build sift's binaries and the hq-interop
# peers (quiche-hq, quinn-hq, and quic-go-hq where Go is installed), then
# run `sift-matrix`: sift, quiche, quinn and quic-go, each as client and as
# server, every pair, every test case.
# Arguments go to sift-matrix (see --help); with none, everything is run
# and interop/matrix/{matrix.md,results.json,logs/} are written.
#
#   interop/matrix.sh                                  # everything (about 10 minutes on 2 cores)
#   interop/matrix.sh --ci                             # the CI slice: sift ↔ quiche, quinn, quic-go; handshake, transfer
#   interop/matrix.sh --only retry,zerortt --clients quinn --servers sift,quiche
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked -p sift-bin --bins >&2
cargo build --release --locked --manifest-path interop/Cargo.toml >&2
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
    sift_bin="$CARGO_TARGET_DIR/release"
    peer_bin="$CARGO_TARGET_DIR/release"
else
    sift_bin=target/release
    peer_bin=interop/target/release
fi
# quic-go's peer is a Go program; without Go this says so and the matrix
# leaves quic-go out.
interop/quic-go/build.sh "$peer_bin" >&2
exec "$peer_bin/sift-matrix" --sift-bin "$sift_bin" --peer-bin "$peer_bin" "$@"
