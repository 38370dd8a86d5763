#!/usr/bin/env bash
# Multi-core sift-server on loopback: N concurrent downloads from a server
# with --workers 1 and --workers 2 (or --workers-list), side by side.
#
#   benches/workers.sh [--clients 8] [--mb 64] [--reps 3] [--workers-list 1,2] [--bin DIR]
#
# For each run: aggregate goodput (all bytes / wall time from the first
# request to the last verified file), server CPU seconds (user + system) per
# GB, clients per worker (from the server's transfer lines) and CPU seconds of
# each worker's endpoint thread ("sift-worker N", read from /proc before the
# server stops). Prints one line per run and a median table per worker count.
set -euo pipefail

clients=8 mb=64 reps=3 workers_list=1,2
bin="$(cd "$(dirname "$0")/.." && pwd)/target/release"
while [ $# -gt 0 ]; do
    case "$1" in
        --clients) clients=$2; shift 2 ;;
        --mb) mb=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --workers-list) workers_list=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        -h|--help) sed -n 2,12p "$0"; exit 0 ;;
        *) echo "workers.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
for tool in sift-server sift-client; do
    [ -x "$bin/$tool" ] || { echo "workers.sh: $bin/$tool missing (cargo build --release -p sift-bin)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/sift-workers.XXXXXX)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/root" "$work/state"
head -c $((mb * 1000000)) /dev/urandom > "$work/root/f.bin"
want=$(sha256sum "$work/root/f.bin" | cut -d' ' -f1)
tick=$(getconf CLK_TCK)

# CPU seconds (utime + stime) of a /proc stat file.
cpu_of() { awk -v t="$tick" '{ sub(/.*\) /, ""); print ($12 + $13) / t }' "$1"; }

results="$work/results"
: > "$results"
for rep in $(seq 1 "$reps"); do
    for workers in ${workers_list//,/ }; do
        port=$((20000 + RANDOM % 20000))
        "$bin/sift-server" --listen "127.0.0.1:$port" --root "$work/root" --state-dir "$work/state" \
            --workers "$workers" > "$work/server.log" 2>&1 &
        server=$!
        for _ in $(seq 50); do grep -q "^listening" "$work/server.log" && break; sleep 0.1; done
        pin=$(grep -o 'SHA256:[0-9a-f]*' "$work/server.log" | head -1)
        start=$(date +%s.%N)
        pids=()
        for i in $(seq "$clients"); do
            "$bin/sift-client" get "sift://127.0.0.1:$port/f.bin" -o "$work/out$i.bin" "--pin=$pin" \
                > "$work/client$i.log" 2>&1 &
            pids+=($!)
        done
        for pid in "${pids[@]}"; do wait "$pid" || { echo "workers.sh: a client failed:" >&2; cat "$work"/client*.log >&2; exit 1; }; done
        end=$(date +%s.%N)
        for i in $(seq "$clients"); do
            [ "$(sha256sum "$work/out$i.bin" | cut -d' ' -f1)" = "$want" ] || { echo "workers.sh: client $i: wrong bytes" >&2; exit 1; }
        done
        for _ in $(seq 50); do [ "$(grep -c result=ok "$work/server.log")" -ge "$clients" ] && break; sleep 0.1; done
        server_cpu=$(cpu_of "/proc/$server/stat")
        per_worker=""
        for task in /proc/$server/task/*; do
            name=$(cat "$task/comm")
            case "$name" in
                sift-worker*) per_worker+="${name##* }:$(cpu_of "$task/stat") " ;;
                sift-driver*) per_worker+="0:$(cpu_of "$task/stat") " ;;
            esac
        done
        kill "$server"; wait "$server" 2>/dev/null || true
        spread=$( (grep -o 'worker=[0-9]*' "$work/server.log" || true) | sort | uniq -c | awk '{printf "%s ", $1}')
        [ -n "$spread" ] || spread="$clients"
        awk -v w="$workers" -v r="$rep" -v s="$start" -v e="$end" -v n="$clients" -v mb="$mb" \
            -v cpu="$server_cpu" -v spread="$spread" -v pw="$per_worker" 'BEGIN {
                gb = n * mb / 1000; t = e - s
                printf "workers=%d rep=%d goodput=%.0f Mb/s server_cpu=%.2f s/GB clients_per_worker=[%s] worker_thread_cpu=[%s]\n",
                    w, r, gb * 8000 / t, cpu / gb, spread, pw
            }' | tee -a "$results"
    done
done

echo
echo "| workers | goodput (median) | server CPU s/GB (median) |"
echo "|---|---|---|"
# The median of the numbers on stdin.
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for workers in ${workers_list//,/ }; do
    runs=$(grep "^workers=$workers " "$results")
    goodput=$(sed 's/.*goodput=\([0-9.]*\).*/\1/' <<< "$runs" | median)
    cpu=$(sed 's/.*server_cpu=\([0-9.]*\).*/\1/' <<< "$runs" | median)
    echo "| $workers | $goodput Mb/s | $cpu |"
done
