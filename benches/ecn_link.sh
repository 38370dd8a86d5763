#!/usr/bin/env bash
# ECN over real sockets through sift-link: a marking bottleneck and a path
# that bleaches the field, each with sift's ECN on and off.
#
#   benches/ecn_link.sh [--rate-mbit 20] [--delay-ms 10] [--loss 1%] [--mb 20]
#                       [--reps 3] [--cc cubic] [--bin DIR]
#
# One sift-server behind one sift-link per run; the download runs server →
# client (sift-link's --reverse direction):
#   marking: "delay D rate R limit 200 loss L codel target 5ms interval 100ms ecn"
#   bleach:  the same, then "bleach" (the field is cleared, so nothing is marked)
# and each with `--ecn on` and `--ecn off` on both ends, interleaved in every
# rep. Prints one row per download (goodput, the sender's ECN state as the
# client reports it, CE marks, the link's random losses, AQM marks and AQM
# drops) and the medians per path and setting. What it shows: on the
# marking path ECN turns CoDel's drops into marks; on the bleaching path
# validation fails, the sender falls back to Not-ECT, and goodput matches
# ECN off.
set -euo pipefail

rate_mbit=20 delay_ms=10 loss=1% mb=20 reps=3 cc=cubic
top="$(cd "$(dirname "$0")/.." && pwd)"
bin="$top/target/release"
while [ $# -gt 0 ]; do
    case "$1" in
        --rate-mbit) rate_mbit=$2; shift 2 ;;
        --delay-ms) delay_ms=$2; shift 2 ;;
        --loss) loss=$2; shift 2 ;;
        --mb) mb=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --cc) cc=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        -h|--help) sed -n 2,18p "$0"; exit 0 ;;
        *) echo "ecn_link.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
for tool in "$bin/sift-server" "$bin/sift-client" "$bin/sift-link"; do
    [ -x "$tool" ] || { echo "ecn_link.sh: $tool missing (cargo build --release -p sift-bin)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/sift-ecn-link.XXXXXX)
pids=()
stop_all() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done; pids=(); }
trap 'stop_all; rm -rf "$work"' EXIT
mkdir -p "$work/root"
head -c $((mb * 1000000)) /dev/urandom > "$work/root/f.bin"
want=$(sha256sum "$work/root/f.bin" | cut -d' ' -f1)
marking="delay ${delay_ms}ms rate ${rate_mbit}mbit limit 200 loss $loss codel target 5ms interval 100ms ecn"

listening() {
    for _ in $(seq 100); do
        addr=$(sed -n 's/.*listening on \([^ ,]*\).*/\1/p' "$1" | head -1)
        [ -n "$addr" ] && { echo "$addr"; return; }
        sleep 0.1
    done
    cat "$1" >&2
    exit 1
}

# Prints "PATH ECN MBPS BYTE-EXACT STATE CE RANDOM-LOSSES AQM-MARKS AQM-DROPS".
run() {
    local path=$1 ecn=$2 seed=$3 data=$marking
    [ "$path" = bleach ] && data="$marking bleach"
    rm -rf "$work/state" "$work/home"; mkdir -p "$work/state" "$work/home"
    "$bin/sift-server" --listen 127.0.0.1:0 --root "$work/root" --state-dir "$work/state" \
        --cc "$cc" --ecn "$ecn" > "$work/server.log" 2>&1 &
    pids+=($!)
    local server pin link
    server=$(listening "$work/server.log")
    pin=$(grep -o 'SHA256:[0-9a-f]*' "$work/server.log" | head -1)
    "$bin/sift-link" --listen 127.0.0.1:0 --to "$server" --seed "$seed" \
        --forward "delay ${delay_ms}ms" --reverse "$data" > "$work/link.log" 2>&1 &
    pids+=($!)
    link=$(listening "$work/link.log")
    HOME="$work/home" "$bin/sift-client" get "sift://$link/f.bin" -o "$work/out.bin" \
        --json --ecn "$ecn" --pin "$pin" > "$work/report.json"
    stop_all
    local counters
    counters=$(grep '^  reverse:' "$work/link.log" | tail -1)
    python3 - "$path" "$ecn" "$want" "$work/report.json" "$counters" <<'PY'
import json, re, sys
path, ecn, want, report, counters = sys.argv[1:6]
r = json.loads(next(l for l in open(report) if l.startswith("{")))
e = r.get("ecn") or {}
def count(name):
    m = re.search(name + r" (\d+)", counters)
    return m.group(1) if m else "?"
state = e.get("state", "-") + ("/" + e["failure"] if e.get("failure") else "")
ce = (e.get("reported_by_peer") or {}).get("ce", 0)
print(path, ecn, "%.2f" % (r["goodput_bps"] / 1e6), r["sha256"] == want, state, ce,
      count("random losses"), count("AQM marks"), count("AQM drops"))
PY
}

echo "# sift-link: data (server → client) \"$marking\" (and + \"bleach\"), requests and ACKs \"delay ${delay_ms}ms\"; $mb MB; --cc $cc; $reps reps (seeds 1-$reps)"
echo "# path ecn goodput_mbps byte_exact sender_state ce_marks random_losses aqm_marks aqm_drops"
: > "$work/rows"
for rep in $(seq "$reps"); do
    for path in marking bleach; do
        for ecn in on off; do
            run "$path" "$ecn" "$rep" | tee -a "$work/rows"
        done
    done
done
echo "# medians: path, ECN, goodput (Mb/s), AQM marks, AQM drops"
python3 - "$work/rows" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    path, ecn, mbps, exact, _state, _ce, _losses, marks, drops = line.split()
    if exact == "True":
        rows[(path, ecn)].append((float(mbps), int(marks), int(drops)))
for (path, ecn), runs in sorted(rows.items()):
    med = lambda i: statistics.median(run[i] for run in runs)
    print(f"{path:8} ecn {ecn:3}: {med(0):.2f} Mb/s, AQM marks {med(1):.0f}, drops {med(2):.0f} ({len(runs)} byte-exact)")
for path in ("marking", "bleach"):
    on, off = rows.get((path, "on")), rows.get((path, "off"))
    if on and off:
        ratio = statistics.median(r[0] for r in on) / statistics.median(r[0] for r in off)
        print(f"{path}: ECN on / ECN off goodput {ratio:.3f}")
PY
