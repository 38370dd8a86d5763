#!/usr/bin/env bash
# A first and a resumed download over one satellite path through sift-link,
# sift beside quiche: what Careful Resume (RFC 9959) gives a second
# connection over real sockets.
#
#   benches/long_path_link.sh [--rtt-ms 600] [--rate-mbit 50] [--loss 1%] [--mb 20]
#                             [--reps 3] [--sift-cc cubic,bbr] [--bin DIR] [--peer-bin DIR]
#
# Each rep and stack: one server behind one sift-link (delay RTT/2 each way,
# the data direction at RATE with a one-BDP queue and LOSS), and one client
# process that downloads the file twice, the second connection resuming the
# first's TLS session: `sift-client get --repeat 2` (the server's address
# token carries the path it measured, so the second connection may jump),
# `quiche-hq client --resume` (quiche has no Careful Resume: its second
# connection starts from ten packets again). Prints each download's
# goodput (file bytes over the time from its request to its last byte) and
# the medians per stack and connection.
set -euo pipefail

rtt_ms=600 rate_mbit=50 loss=1% mb=20 reps=3 sift_ccs=cubic,bbr
top="$(cd "$(dirname "$0")/.." && pwd)"
bin="$top/target/release"
peer_bin="$top/interop/target/release"
while [ $# -gt 0 ]; do
    case "$1" in
        --rtt-ms) rtt_ms=$2; shift 2 ;;
        --rate-mbit) rate_mbit=$2; shift 2 ;;
        --loss) loss=$2; shift 2 ;;
        --mb) mb=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --sift-cc) sift_ccs=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --peer-bin) peer_bin=$2; shift 2 ;;
        -h|--help) sed -n 2,17p "$0"; exit 0 ;;
        *) echo "long_path_link.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
for tool in "$bin/sift-server" "$bin/sift-client" "$bin/sift-link" "$peer_bin/quiche-hq"; do
    [ -x "$tool" ] || { echo "long_path_link.sh: $tool missing (cargo build --release -p sift-bin; cargo build --release --manifest-path interop/Cargo.toml)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/sift-long-path.XXXXXX)
pids=()
stop_all() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; pids=(); }
trap 'stop_all; rm -rf "$work"' EXIT
mkdir -p "$work/root"
head -c $((mb * 1000000)) /dev/urandom > "$work/root/f.bin"
want=$(sha256sum "$work/root/f.bin" | cut -d' ' -f1)
half=$((rtt_ms / 2))
# One BDP of 1350-byte datagrams.
queue=$((rate_mbit * 1000000 / 8 * rtt_ms / 1000 / 1350))
# The download runs server → client: sift-link's --reverse direction.
data="delay ${half}ms rate ${rate_mbit}mbit limit $queue loss $loss"

listening() {
    for _ in $(seq 100); do
        addr=$(sed -n 's/.*listening on \([^ ,]*\).*/\1/p' "$1" | head -1)
        [ -n "$addr" ] && { echo "$addr"; return; }
        sleep 0.1
    done
    cat "$1" >&2
    exit 1
}

# Starts sift-link in front of $1 with seed $2; sets $link to its address.
# Not called in a command substitution: its subshell would keep the link's
# pid from stop_all, and every link would outlive its run.
start_link() {
    "$bin/sift-link" --listen 127.0.0.1:0 --to "$1" --seed "$2" \
        --forward "delay ${half}ms" --reverse "$data" > "$work/link.log" 2>&1 &
    pids+=($!)
    link=$(listening "$work/link.log")
}

# Prints "STACK CC CONNECTION MBPS BYTE-EXACT NOTE" for each download.
run_sift() {
    local cc=$1 seed=$2
    rm -rf "$work/state" "$work/home"; mkdir -p "$work/state" "$work/home"
    "$bin/sift-server" --listen 127.0.0.1:0 --root "$work/root" --state-dir "$work/state" \
        --cc "$cc" --pmtud off > "$work/server.log" 2>&1 &
    pids+=($!)
    local server pin link
    server=$(listening "$work/server.log")
    pin=$(grep -o 'SHA256:[0-9a-f]*' "$work/server.log" | head -1)
    start_link "$server" "$seed"
    HOME="$work/home" "$bin/sift-client" get "sift://$link/f.bin" -o "$work/out.bin" \
        --json --repeat 2 --pmtud off --pin "$pin" > "$work/reports.json"
    stop_all
    grep '^{' "$work/reports.json" | python3 -c '
import json, sys
cc, want = sys.argv[1:3]
for n, line in enumerate(sys.stdin, 1):
    r = json.loads(line)
    cr = r.get("careful_resume") or {}
    note = "jumped" if cr.get("jumped") else ("resumed, no jump" if cr else "")
    mbps = r["goodput_bps"] / 1e6
    print("sift %s %d %.2f %s %s" % (cc, n, mbps, r["sha256"] == want, note))
' "$cc" "$want"
}

run_quiche() {
    local seed=$1
    "$peer_bin/quiche-hq" server --listen 127.0.0.1:0 --root "$work/root" > "$work/server.log" 2>&1 &
    pids+=($!)
    local server link
    server=$(listening "$work/server.log")
    start_link "$server" "$seed"
    rm -rf "$work/out"
    "$peer_bin/quiche-hq" client "https://$link/f.bin" "https://$link/f.bin" --output-dir "$work/out" \
        --insecure --resume --json > "$work/report.json"
    stop_all
    python3 -c '
import json, sys
want = sys.argv[1]
r = json.load(open(sys.argv[2]))
for n, f in enumerate(r["files"], 1):
    mbps = f["bytes"] * 8 / (f["elapsed_us"] / 1e6) / 1e6 if f["elapsed_us"] else 0.0
    resumed = "resumed" if n == 2 and r["resumed"] else ""
    print("quiche cubic %d %.2f %s %s" % (n, mbps, f["sha256"] == want, resumed))
' "$want" "$work/report.json"
}

echo "# sift-link: data (server → client) \"$data\", requests and ACKs \"delay ${half}ms\"; $mb MB; $reps reps (seeds 1-$reps)"
echo "# stack cc connection goodput_mbps byte_exact note"
: > "$work/rows"
for rep in $(seq "$reps"); do
    for cc in ${sift_ccs//,/ }; do
        run_sift "$cc" "$rep" | tee -a "$work/rows"
    done
    run_quiche "$rep" | tee -a "$work/rows"
done
echo "# medians (Mb/s): stack cc, first connection, resumed"
python3 - "$work/rows" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    stack, cc, n, mbps, exact = line.split()[:5]
    if exact == "True":
        rows[(stack, cc, n)].append(float(mbps))
for stack, cc in sorted({(s, c) for s, c, _ in rows}):
    first = statistics.median(rows[(stack, cc, "1")])
    second = statistics.median(rows[(stack, cc, "2")])
    print(f"{stack} {cc}: first {first:.2f}, resumed {second:.2f} ({second / first:.2f}x)")
PY
