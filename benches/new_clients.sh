#!/usr/bin/env bash
# New clients of a busy multi-worker sift-server on loopback: while long
# transfers are held open, N small downloads one after another, each timed
# from start to verified file. A worker that sends a new client to a less
# busy one does so with a Retry, so this is where workers that disagree on
# token time show (each stalled client waits out its Initial timeouts).
#
#   benches/new_clients.sh [--workers 2] [--downloads 50] [--mb 1] [--held 1] [--bin DIR]
#
# Prints one line per download and a summary: median, max, and how many
# took longer than 1 s.
set -euo pipefail

workers=2 downloads=50 mb=1 held=1
bin="$(cd "$(dirname "$0")/.." && pwd)/target/release"
while [ $# -gt 0 ]; do
    case "$1" in
        --workers) workers=$2; shift 2 ;;
        --downloads) downloads=$2; shift 2 ;;
        --mb) mb=$2; shift 2 ;;
        --held) held=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        -h|--help) sed -n 2,11p "$0"; exit 0 ;;
        *) echo "new_clients.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
for tool in sift-server sift-client; do
    [ -x "$bin/$tool" ] || { echo "new_clients.sh: $bin/$tool missing (cargo build --release -p sift-bin)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/sift-new-clients.XXXXXX)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/root" "$work/state"
head -c $((mb * 1000000)) /dev/urandom > "$work/root/small.bin"
want=$(sha256sum "$work/root/small.bin" | cut -d' ' -f1)

port=$((20000 + RANDOM % 20000))
"$bin/sift-server" --listen "127.0.0.1:$port" --root "$work/root" --state-dir "$work/state" \
    --workers "$workers" > "$work/server.log" 2>&1 &
for _ in $(seq 50); do grep -q "^listening" "$work/server.log" && break; sleep 0.1; done
pin=$(grep -o 'SHA256:[0-9a-f]*' "$work/server.log" | head -1)
[ -n "$pin" ] || { echo "new_clients.sh: the server did not start:" >&2; cat "$work/server.log" >&2; exit 1; }

# Long transfers held open for the whole run (the server sends).
for i in $(seq "$held"); do
    XDG_DATA_HOME="$work/held$i" "$bin/sift-client" perf "sift://127.0.0.1:$port" -t 600 -R \
        "--pin=$pin" > "$work/held$i.log" 2>&1 &
done
sleep 1

times="$work/times"
: > "$times"
for i in $(seq "$downloads"); do
    # A state folder of its own: no address token from an earlier run.
    start=$(date +%s.%N)
    XDG_DATA_HOME="$work/client$i" "$bin/sift-client" get "sift://127.0.0.1:$port/small.bin" \
        -o "$work/out.bin" "--pin=$pin" > "$work/client.log" 2>&1 \
        || { echo "new_clients.sh: download $i failed:" >&2; cat "$work/client.log" >&2; exit 1; }
    end=$(date +%s.%N)
    got=$(sha256sum "$work/out.bin" | cut -d' ' -f1)
    [ "$got" = "$want" ] || { echo "new_clients.sh: download $i is not byte-exact" >&2; exit 1; }
    rm -f "$work/out.bin"
    secs=$(echo "$end - $start" | bc -l)
    printf 'download %2d  %.3f s\n' "$i" "$secs"
    echo "$secs" >> "$times"
done

sort -n "$times" | awk -v n="$downloads" -v w="$workers" -v h="$held" '
    { t[NR] = $1; if ($1 > 1.0) slow++ }
    END {
        printf "\n%d downloads of a %s against %d workers with %d long transfer(s) held open:\n", n, "'"${mb}"' MB file", w, h
        printf "median %.3f s, max %.3f s, over 1 s: %d\n", t[int((NR + 1) / 2)], t[NR], slow + 0
    }'
