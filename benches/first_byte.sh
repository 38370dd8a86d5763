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
#
# --client-args go to the first build's client only (the other may predate
# them).
#
# Prints each build's median and the ratio of medians.
set -euo pipefail

rtt_ms=100 runs=10 vs="" client_args=""
bin="$(cd "$(dirname "$0")/.." && pwd)/target/release"
while [ $# -gt 0 ]; do
    case "$1" in
        --rtt-ms) rtt_ms=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --vs) vs=$2; shift 2 ;;
        --client-args) client_args=$2; shift 2 ;;
        -h|--help) sed -n 2,15p "$0"; exit 0 ;;
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
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$work"' EXIT
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
    "$dir/sift-link" --listen "127.0.0.1:$link" --to "127.0.0.1:$port" \
        --forward "delay ${half}ms" --reverse "delay ${half}ms" > "$work/$tag-link.log" 2>&1 &
    for _ in $(seq 50); do grep -q "^listening" "$work/$tag-server.log" && break; sleep 0.1; done
    local pin
    pin=$(grep -o 'SHA256:[0-9a-f]*' "$work/$tag-server.log" | head -1)
    [ -n "$pin" ] || { echo "first_byte.sh: the $tag server did not start" >&2; cat "$work/$tag-server.log" >&2; exit 1; }
    echo "$link $pin"
}

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
