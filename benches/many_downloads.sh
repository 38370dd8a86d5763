#!/usr/bin/env bash
# Many clients at once against one sift-server on loopback: N concurrent
# downloads of one file, each its own connection, every byte checked.
#
#   benches/many_downloads.sh [--clients 1000] [--mb 1] [--server sift|sift-hq|quinn|quiche]
#                             [--bin DIR] [--peer-bin DIR] [--load FILE] [-- server flags]
#
# The load generator brings the connections up 64 handshakes at a time,
# then starts every download together, so the server holds all N at once
# (many_gets --handshakes-at-once, --no-barrier).
#
# Prints the wall time of the whole load (first connection attempt to last
# verified byte, from the load generator; handshakes_done is when the last
# connection came up), the server's peak thread count
# (/proc/PID/status Threads, sampled every 20 ms), its peak resident
# memory (VmHWM), its CPU time (user + system) and the datagrams the
# kernel dropped at its socket for want of receive buffer (/proc/net/udp).
# --bin names the directory of the sift-server to measure (default target/release), --load the load generator (default
# target/release/examples/many_gets: cargo build --release -p sift-bin
# --example many_gets).
#
# --server picks what is measured: `sift` (sift-server, sift's file
# protocol, the default), `sift-hq` (sift-server answering hq-interop in
# QUIC v1), `quinn` or `quiche` (their hq-interop servers from interop/,
# --peer-bin, default interop/target/release: cargo build --release
# --manifest-path interop/Cargo.toml). The last three take the same load,
# many_gets --hq, so only the server differs.
#
# Against `sift` the load line also sums the servers' trailers: senders
# that retransmitted, and that asked to send checksum-free (a loss starts
# that hold; to a loopback client the datapath keeps the checksum anyway).
set -euo pipefail

clients=1000 mb=1 kind=sift
top="$(cd "$(dirname "$0")/.." && pwd)"
bin="$top/target/release"
peer_bin="$top/interop/target/release"
load="$top/target/release/examples/many_gets"
while [ $# -gt 0 ]; do
    case "$1" in
        --clients) clients=$2; shift 2 ;;
        --mb) mb=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --peer-bin) peer_bin=$2; shift 2 ;;
        --server) kind=$2; shift 2 ;;
        --load) load=$2; shift 2 ;;
        --) shift; break ;;
        -h|--help) sed -n 2,30p "$0"; exit 0 ;;
        *) echo "many_downloads.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
case "$kind" in
    sift|sift-hq) server_bin="$bin/sift-server" ;;
    quinn|quiche) server_bin="$peer_bin/$kind-hq" ;;
    *) echo "many_downloads.sh: --server is sift, sift-hq, quinn or quiche, not $kind" >&2; exit 2 ;;
esac
[ -x "$server_bin" ] || { echo "many_downloads.sh: $server_bin missing" >&2; exit 1; }
[ -x "$load" ] || { echo "many_downloads.sh: $load missing" >&2; exit 1; }

work=$(mktemp -d /tmp/sift-many.XXXXXX)
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/root" "$work/state"
head -c $((mb * 1000000)) /dev/urandom > "$work/root/f.bin"

port=$((20000 + RANDOM % 20000))
case "$kind" in
    sift|sift-hq)
        "$server_bin" --listen "127.0.0.1:$port" --root "$work/root" --state-dir "$work/state" \
            --max-clients $((clients + 64)) "$@" > "$work/server.log" 2>&1 & ;;
    *)
        "$server_bin" server --listen "127.0.0.1:$port" --root "$work/root" "$@" \
            > "$work/server.log" 2>&1 & ;;
esac
server=$!
for _ in $(seq 100); do grep -q "^listening" "$work/server.log" && break; sleep 0.1; done
grep -q "^listening" "$work/server.log" || { cat "$work/server.log" >&2; exit 1; }
if [ "$kind" = sift ] || [ "$kind" = sift-hq ]; then
    pin=$(grep -o 'SHA256:[0-9a-f]*' "$work/server.log" | head -1)
else
    # The peer names the certificate it made; pin that one.
    cert=$(sed -n 's/^listening on .*certificate \(.*\))$/\1/p' "$work/server.log" | head -1)
    pin="SHA256:$(openssl x509 -in "$cert" -outform der | sha256sum | cut -d' ' -f1)"
fi
hq=()
[ "$kind" = sift ] || hq=(--hq)
threads_at_start=$(awk '/^Threads:/ {print $2}' "/proc/$server/status")

"$load" "${hq[@]}" --server "127.0.0.1:$port" --pin "$pin" --path f.bin --expect "$work/root/f.bin" \
    --clients "$clients" > "$work/load.out" 2> "$work/load.err" &
loader=$!
peak=0
while kill -0 "$loader" 2>/dev/null; do
    now=$(awk '/^Threads:/ {print $2}' "/proc/$server/status")
    [ "$now" -gt "$peak" ] && peak=$now
    sleep 0.02
done
status=0
wait "$loader" || status=$?
hwm_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$server/status")
# Datagrams the kernel dropped on the server's socket because its receive
# buffer was full (the last column of /proc/net/udp, summed over the
# sockets bound to the port), and the buffer size it had (rx_queue is live).
hexport=$(printf '%04X' "$port")
drops=$(awk -v p=":$hexport" '$2 ~ p"$" {d += $NF} END {print d + 0}' /proc/net/udp)
# User + system CPU seconds of the server for the whole load.
cpu_s=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$server/stat")
if [ "$status" -ne 0 ]; then
    tail -5 "$work/load.err" >&2
fi
per_client=$(awk -v kb="$hwm_kb" -v cpu="$cpu_s" -v n="$clients" \
    'BEGIN {printf "server_kb_per_client=%.0f server_cpu_ms_per_client=%.2f", kb / n, cpu * 1000 / n}')
echo "server=$kind $(cat "$work/load.out") server_threads_start=$threads_at_start server_threads_peak=$peak server_vmhwm=$((hwm_kb / 1024))MB server_cpu=${cpu_s}s server_udp_drops=$drops $per_client"
exit "$status"
