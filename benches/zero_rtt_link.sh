#!/usr/bin/env bash
# What 0-RTT saves on a long path: a resumed GET's first byte, with its
# request in 0-RTT against after the handshake, through sift-link.
#
#   benches/zero_rtt_link.sh [--rtt-ms 600] [--rate 50mbit] [--kb 200] [--reps 3] [--bin DIR]
#
# One sift-server behind one sift-link (delay RTT/2 each way at RATE). Each
# rep runs `sift-client get --repeat 2 --json` twice: with 0-RTT (the
# default) and with --no-0rtt; the second connection of each resumes the
# first's session. Prints one line per connection (time to first byte from
# the start of the connection, handshake included; resumed; 0-RTT fate;
# byte-exact) and the medians of the resumed connections' first byte.
set -euo pipefail

rtt_ms=600 rate=50mbit kb=200 reps=3
top="$(cd "$(dirname "$0")/.." && pwd)"
bin="$top/target/release"
while [ $# -gt 0 ]; do
    case "$1" in
        --rtt-ms) rtt_ms=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --kb) kb=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        -h|--help) sed -n 2,12p "$0"; exit 0 ;;
        *) echo "zero_rtt_link.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
for tool in sift-server sift-client sift-link; do
    [ -x "$bin/$tool" ] || { echo "zero_rtt_link.sh: $bin/$tool missing (cargo build --release -p sift-bin)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/sift-0rtt.XXXXXX)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/root" "$work/server-state" "$work/home"
head -c $((kb * 1000)) /dev/urandom > "$work/root/f.bin"
want=$(sha256sum "$work/root/f.bin" | cut -d' ' -f1)

# Waits for "listening on ADDR" in $1 and prints ADDR.
listening() {
    for _ in $(seq 100); do
        addr=$(sed -n 's/.*listening on \([^ ,]*\).*/\1/p' "$1" | head -1)
        [ -n "$addr" ] && { echo "$addr"; return; }
        sleep 0.1
    done
    cat "$1" >&2
    exit 1
}

"$bin/sift-server" --listen 127.0.0.1:0 --root "$work/root" --state-dir "$work/server-state" \
    > "$work/server.log" 2>&1 &
pids+=($!)
server=$(listening "$work/server.log")
pin=$(grep -o 'SHA256:[0-9a-f]*' "$work/server.log" | head -1)
half=$((rtt_ms / 2))
"$bin/sift-link" --listen 127.0.0.1:0 --to "$server" \
    --forward "delay ${half}ms rate $rate" --reverse "delay ${half}ms rate $rate" \
    > "$work/link.log" 2>&1 &
pids+=($!)
link=$(listening "$work/link.log")

echo "# sift-link: delay ${half}ms each way, rate $rate; ${kb} kB file; $reps reps"
early=() late=()
for rep in $(seq "$reps"); do
    for mode in 0rtt no-0rtt; do
        flags=()
        [ "$mode" = no-0rtt ] && flags=(--no-0rtt)
        # A fresh client state each time: the first connection is full.
        rm -rf "$work/home"; mkdir -p "$work/home"
        HOME="$work/home" "$bin/sift-client" get "sift://$link/f.bin" -o "$work/out.bin" \
            --json --repeat 2 "${flags[@]}" --pin "$pin" > "$work/reports.json"
        n=0
        while read -r line; do
            n=$((n + 1))
            echo "$line" | python3 -c '
import json, sys
r = json.load(sys.stdin)
rep, mode, n, want = sys.argv[1:5]
ttfb, resumed, fate, early = r["time_to_first_byte_s"], r["tls_resumed"], r["zero_rtt"], r["zero_rtt_bytes"]
exact = r["sha256"] == want
print(f"rep {rep} {mode:8} connection {n}: first byte {ttfb:.3f} s, resumed {resumed}, 0-RTT {fate} ({early} bytes), byte-exact {exact}")
' "$rep" "$mode" "$n" "$want"
            if [ "$n" = 2 ]; then
                ttfb=$(echo "$line" | python3 -c 'import json,sys; print(json.load(sys.stdin)["time_to_first_byte_s"])')
                if [ "$mode" = 0rtt ]; then early+=("$ttfb"); else late+=("$ttfb"); fi
            fi
        done < <(grep '^{' "$work/reports.json")
    done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
m0=$(median "${early[@]}") m1=$(median "${late[@]}")
awk -v a="$m0" -v b="$m1" -v rtt="$rtt_ms" 'BEGIN {
    printf "resumed first byte, median: 0-RTT %.3f s, after the handshake %.3f s: %.3f s earlier (%.2f RTT)\n",
        a, b, b - a, (b - a) * 1000 / rtt }'
