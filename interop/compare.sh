#!/usr/bin/env bash
# The one command: build sift's binaries and the peers (quiche, quinn, and
# quic-go where Go is installed), then run the comparison. Arguments go to `sift-compare run` (see --help); with
# none, the full comparison is written to interop/results/.
#
#   interop/compare.sh                          # everything (about an hour on 2 cores)
#   interop/compare.sh --only veno-1m6-120ms    # one link
#   interop/compare.sh --shard 2/8 --out /tmp/shards/2
#   interop/compare.sh merge /tmp/shards/* --out interop/results
#
# SIFT_COMPARE_QUICHE_0_24=1 also builds quiche 0.24 apart
# (interop/quiche-0.24/: its own BoringSSL, minutes on a fresh machine, so
# CI leaves it out) and adds its rows ("quiche-0.24") beside the newest
# quiche's ("quiche").
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked -p sift-bin --bins >&2
cargo build --release --locked --manifest-path interop/Cargo.toml >&2
compare="${CARGO_TARGET_DIR:-interop/target}/release/sift-compare"
# quic-go's peer is a Go program; without Go this says so and the
# comparison has no quic-go rows.
if [ "${1:-}" != merge ]; then
    interop/quic-go/build.sh "${CARGO_TARGET_DIR:-interop/target}/release" >&2
fi
extra=()
if [ "${SIFT_COMPARE_QUICHE_0_24:-0}" = 1 ] && [ "${1:-}" != merge ]; then
    cargo build --release --locked --manifest-path interop/quiche-0.24/Cargo.toml >&2
    extra=(--quiche-0-24-bin "${CARGO_TARGET_DIR:-interop/quiche-0.24/target}/release")
fi
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
    sift_bin="$CARGO_TARGET_DIR/release"
else
    sift_bin=target/release
fi
if [ "${1:-}" = merge ]; then
    exec "$compare" "$@"
fi
exec "$compare" run --sift-bin "$sift_bin" "${extra[@]}" "$@"
