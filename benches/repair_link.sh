#!/usr/bin/env bash
# Erasure coding over real sockets: 1 MB downloads through sift-link on a
# long lossy path, sift-server with --repair off (plain retransmission)
# and --repair auto (sift's default), interleaved rep by rep on the same
# link seed.
#
#   benches/repair_link.sh [--rtt-ms 600] [--rate-mbit 20] [--loss 5%] [--mb 1]
#                          [--reps 10] [--cc bbr] [--bin DIR]
#
# Prints each download's completion (request to last byte, from
# `sift-client get --json`), the process's wall time (handshake and all),
# whether the file is byte-exact, and the repair counters; then the median
# and 90th percentile per mode and the ratio auto / off.
set -euo pipefail

rtt_ms=600 rate_mbit=20 loss=5% mb=1 reps=10 cc=bbr
top="$(cd "$(dirname "$0")/.." && pwd)"
bin="$top/target/release"
while [ $# -gt 0 ]; do
    case "$1" in
        --rtt-ms) rtt_ms=$2; shift 2 ;;
        --rate-mbit) rate_mbit=$2; shift 2 ;;
        --loss) loss=$2; shift 2 ;;
        --mb) mb=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --cc) cc=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        -h|--help) sed -n 2,14p "$0"; exit 0 ;;
        *) echo "repair_link.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
for tool in "$bin/sift-server" "$bin/sift-client" "$bin/sift-link"; do
    [ -x "$tool" ] || { echo "repair_link.sh: $tool missing (cargo build --release -p sift-bin)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/sift-repair-link.XXXXXX)
pids=()
stop_all() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; pids=(); }
trap 'stop_all; rm -rf "$work"' EXIT
mkdir -p "$work/root"
head -c $((mb * 1000000)) /dev/urandom > "$work/root/f.bin"
want=$(sha256sum "$work/root/f.bin" | cut -d' ' -f1)
half=$((rtt_ms / 2))
queue=$((rate_mbit * 1000000 / 8 * rtt_ms / 1000 / 1350 + 1))
# The download runs server → client: sift-link's --reverse direction.
data="delay ${half}ms rate ${rate_mbit}mbit limit $queue loss $loss"

listening() {
    for _ in $(seq 100); do
        addr=$(sed -n 's/.*listening on \([^ ,]*\).*/\1/p' "$1" 2>/dev/null | head -1)
        [ -n "$addr" ] && { echo "$addr"; return; }
        sleep 0.1
    done
    cat "$1" >&2
    exit 1
}

# Prints "MODE SEED COMPLETION_S WALL_S BYTE_EXACT SYMBOLS REBUILT".
run() {
    local mode=$1 seed=$2
    rm -rf "$work/state" "$work/home" "$work/out.bin"; mkdir -p "$work/state" "$work/home"
    "$bin/sift-server" --listen 127.0.0.1:0 --root "$work/root" --state-dir "$work/state" \
        --cc "$cc" --repair "$mode" > "$work/server.log" 2>&1 &
    pids+=($!)
    local server pin link start end
    server=$(listening "$work/server.log")
    pin=$(grep -o 'SHA256:[0-9a-f]*' "$work/server.log" | head -1)
    "$bin/sift-link" --listen 127.0.0.1:0 --to "$server" --seed "$seed" \
        --forward "delay ${half}ms" --reverse "$data" > "$work/link.log" 2>&1 &
    pids+=($!)
    link=$(listening "$work/link.log")
    start=$(date +%s.%N)
    HOME="$work/home" "$bin/sift-client" get "sift://$link/f.bin" -o "$work/out.bin" \
        --json --pin "$pin" > "$work/report.json"
    end=$(date +%s.%N)
    stop_all
    python3 -c '
import json, sys
mode, seed, want, start, end = sys.argv[1:6]
r = json.loads([l for l in open(sys.argv[6]) if l.startswith("{")][-1])
rep = r.get("repair", {})
print(mode, seed, "%.3f" % r["completion_s"], "%.3f" % (float(end) - float(start)),
      r["sha256"] == want, rep.get("symbols_sent", 0), rep.get("peer_rebuilt", 0))
' "$mode" "$seed" "$want" "$start" "$end" "$work/report.json"
}

echo "# sift-link: data (server → client) \"$data\", requests and ACKs \"delay ${half}ms\"; $mb MB; $cc; $reps reps (seeds 1-$reps)"
echo "# mode seed completion_s wall_s byte_exact repair_symbols rebuilt"
: > "$work/rows"
for rep in $(seq "$reps"); do
    for mode in off auto; do
        run "$mode" "$rep" | tee -a "$work/rows"
    done
done
python3 - "$work/rows" <<'PY'
import sys, statistics, math
rows = {}
exact = True
for line in open(sys.argv[1]):
    mode, seed, completion, wall, ok = line.split()[:5]
    exact &= ok == "True"
    rows.setdefault(mode, []).append((float(completion), float(wall)))
def p90(values):
    values = sorted(values)
    return values[max(0, math.ceil(0.9 * len(values)) - 1)]
print("# mode: completion median / p90 (s), wall median / p90 (s)")
for mode, values in rows.items():
    c = [v[0] for v in values]; w = [v[1] for v in values]
    print(f"{mode}: {statistics.median(c):.2f} / {p90(c):.2f}, {statistics.median(w):.2f} / {p90(w):.2f}")
if "off" in rows and "auto" in rows:
    ratio = p90([v[0] for v in rows["auto"]]) / p90([v[0] for v in rows["off"]])
    wall = p90([v[1] for v in rows["auto"]]) / p90([v[1] for v in rows["off"]])
    print(f"auto / off, 90th percentile: completion {ratio:.2f}, wall {wall:.2f}; every file byte-exact: {exact}")
PY
