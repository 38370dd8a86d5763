#!/usr/bin/env bash
# Time to first byte over a long path: a client fetches a 1-byte file from
# sift-server through sift-link (RTT_MS round trip, no loss), N times, each
# timed from process start to verified file (handshake, request, answer).
# With --vs DIR, the same against another build's binaries (a server and
# link of their own), run in turn with this one, so the handshake's round
# trips can be compared side by side.
#
#   benches/first_byte.sh [--rtt-ms 100] [--runs 10] [--bin DIR] [--vs DIR]
#                         [--client-args '--versions sift/1']
#   benches/first_byte.sh --zero-rtt [--rtt-ms 600] [--runs 5] [--bin DIR]
#
# --client-args go to the first build's client only (the other may predate
# them).
#
# Prints each build's median and the ratio of medians.
#
# --zero-rtt: resumption with and without 0-RTT, one build. Each run is
# `sift-client get --repeat 2 --json` (the second connection resumes the
# first's session), once as is and once with --no-0rtt; the figure is the
# client's time_to_first_byte_s (connection start to the server's answer,
# handshake included) of the first and of the resumed connection, and the
# file is checked byte-exact. Prints the medians and their difference in
# round trips.
set -euo pipefail

rtt_ms=100 runs=10 vs="" client_args="" zero_rtt=""
bin="$(cd "$(dirname "$0")/.." && pwd)/target/release"
while [ $# -gt 0 ]; do
    case "$1" in
        --rtt-ms) rtt_ms=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --vs) vs=$2; shift 2 ;;
        --client-args) client_args=$2; shift 2 ;;
        --zero-rtt) zero_rtt=1; shift ;;
        -h|--help) sed -n 2,24p "$0"; exit 0 ;;
        *) echo "first_byte.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
builds=("$bin")
[ -n "$vs" ] && builds+=("$vs")
for dir in "${builds[@]}"; do
    for tool in sift-server sift-client sift-link; do
        [ -x "$dir/$tool" ] || { echo "first_byte.sh: $dir/$tool missing (cargo build --release -p sift-bin)" >&2; exit 1; }
    done
done

work=$(mktemp -d /tmp/sift-first-byte.XXXXXX)
# Servers and links start inside $(…) subshells, so they are not this
# shell's children: their ids go to $work/pids for the cleanup.
trap '[ -f "$work/pids" ] && kill $(cat "$work/pids") 2>/dev/null; pkill -P $$ 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/root"
printf x > "$work/root/one.bin"
half=$((rtt_ms / 2))

# One server and link per build; prints "PORT PIN".
start_build() {
    local dir=$1 tag=$2
    local port=$((20000 + RANDOM % 20000)) link=$((20000 + RANDOM % 20000))
    mkdir -p "$work/$tag-state"
    "$dir/sift-server" --listen "127.0.0.1:$port" --root "$work/root" --state-dir "$work/$tag-state" \
        > "$work/$tag-server.log" 2>&1 &
    echo $! >> "$work/pids"
    "$dir/sift-link" --listen "127.0.0.1:$link" --to "127.0.0.1:$port" \
        --forward "delay ${half}ms" --reverse "delay ${half}ms" > "$work/$tag-link.log" 2>&1 &
    echo $! >> "$work/pids"
    for _ in $(seq 50); do grep -q "^listening" "$work/$tag-server.log" && break; sleep 0.1; done
    local pin
    pin=$(grep -o 'SHA256:[0-9a-f]*' "$work/$tag-server.log" | head -1)
    [ -n "$pin" ] || { echo "first_byte.sh: the $tag server did not start" >&2; cat "$work/$tag-server.log" >&2; exit 1; }
    echo "$link $pin"
}

if [ -n "$zero_rtt" ]; then
    read -r link pin <<< "$(start_build "$bin" zero)"
    sleep 0.5
    head -c 100000 /dev/urandom > "$work/root/file.bin"
    for run in $(seq "$runs"); do
        for mode in 0rtt no-0rtt; do
            extra=""
            [ "$mode" = no-0rtt ] && extra="--no-0rtt"
            # shellcheck disable=SC2086 # extra is a list of words
            XDG_DATA_HOME="$work/client-$mode-$run" "$bin/sift-client" get \
                "sift://127.0.0.1:$link/file.bin" -o "$work/out-$mode.bin" "--pin=$pin" \
                --json --repeat 2 $extra > "$work/reports.json" 2> "$work/client.log" \
                || { echo "first_byte.sh: run $run ($mode) failed:" >&2; cat "$work/client.log" >&2; exit 1; }
            cmp -s "$work/out-$mode.bin" "$work/root/file.bin" || { echo "first_byte.sh: $mode: file differs" >&2; exit 1; }
            python3 -c '
import json, sys
first, second = [json.loads(line) for line in open(sys.argv[1])]
assert second["tls_resumed"], "the second connection did not resume"
print(first["time_to_first_byte_s"], second["time_to_first_byte_s"], second["zero_rtt"])
' "$work/reports.json" >> "$work/ttfb-$mode"
        done
    done
    median() { sort -n | awk '{ t[NR] = $1 } END { print t[int((NR + 1) / 2)] }'; }
    for mode in 0rtt no-0rtt; do
        first=$(cut -d' ' -f1 "$work/ttfb-$mode" | median)
        resumed=$(cut -d' ' -f2 "$work/ttfb-$mode" | median)
        outcome=$(cut -d' ' -f3 "$work/ttfb-$mode" | sort | uniq -c | tr -s ' ' | paste -sd,)
        printf '%-8s first connection %.3f s, resumed %.3f s (0-RTT:%s), median of %d, RTT %d ms\n' \
            "$mode" "$first" "$resumed" "$outcome" "$runs" "$rtt_ms"
        echo "$resumed" > "$work/resumed-$mode"
    done
    paste -d' ' "$work/resumed-0rtt" "$work/resumed-no-0rtt" | awk -v rtt="$rtt_ms" \
        '{ printf "0-RTT saves %.3f s = %.2f RTT on the resumed connection\n", $2 - $1, ($2 - $1) * 1000 / rtt }'
    exit 0
fi

declare -A target
for i in "${!builds[@]}"; do
    target[$i]=$(start_build "${builds[$i]}" "build$i")
done
sleep 0.5

for run in $(seq "$runs"); do
    for i in "${!builds[@]}"; do
        read -r link pin <<< "${target[$i]}"
        args=""
        [ "$i" -eq 0 ] && args=$client_args
        start=$(date +%s.%N)
        # shellcheck disable=SC2086 # args is a list of words
        XDG_DATA_HOME="$work/client$i-$run" "${builds[$i]}/sift-client" get \
            "sift://127.0.0.1:$link/one.bin" -o "$work/out$i.bin" "--pin=$pin" $args \
            > "$work/client.log" 2>&1 \
            || { echo "first_byte.sh: run $run of build $i failed:" >&2; cat "$work/client.log" >&2; exit 1; }
        end=$(date +%s.%N)
        [ "$(cat "$work/out$i.bin")" = x ] || { echo "first_byte.sh: wrong byte" >&2; exit 1; }
        echo "$end - $start" | bc -l >> "$work/times$i"
    done
done

for i in "${!builds[@]}"; do
    median=$(sort -n "$work/times$i" | awk '{ t[NR] = $1 } END { print t[int((NR + 1) / 2)] }')
    printf '%s: median %.3f s over %d runs (RTT %d ms)\n' "${builds[$i]}" "$median" "$runs" "$rtt_ms"
    echo "$median" > "$work/median$i"
done
if [ -n "$vs" ]; then
    awk '{ print }' "$work/median0" "$work/median1" | paste -sd' ' | awk '{ printf "ratio %.3f (first build / second)\n", $1 / $2 }'
fi
