#!/usr/bin/env bash
# A resumed connection's first byte over a long path, against a default
# sift-server (one worker per core, so a client may land on either): each
# run is `sift-client get URL --repeat 2 --json` through sift-link (RTT_MS
# round trip, half each way, no loss) with a state directory of its own, so
# the first connection is new and the second resumes its TLS session with
# the address token the first was given, sending its request in 0-RTT. The
# figure is the resumed connection's time_to_first_byte_s (connection
# start to the server's answer); with one round trip for the answer it is
# about RTT_MS. A balancing Retry to another worker, or 0-RTT data lost
# to one, costs a round trip or more (issue 53, finding 4).
#
#   benches/resume_first_byte.sh [--rtt-ms 600] [--runs 20] [--within 0.65]
#                                [--bin DIR] [--server-args '--workers 2']
#
# Prints one line per run (the first and the resumed connection's first
# byte, the 0-RTT outcome), then the resumed connections' median and
# maximum; exits 1 if any resumed first byte came later than --within
# seconds, or if a second connection did not resume.
#
# Measured (issue 53, 2 cores, release build of the trust-early branch on
# main a908c73, load about 11 from other builds), with
#   cargo build --release -p sift-bin --bins && benches/resume_first_byte.sh --runs 20
# (600 ms RTT, default sift-server: 2 workers): resumed first byte median
# 0.602 s, max 0.618 s, 20 of 20 within 0.65 s, each with 0-RTT accepted
# and Careful Resume; first connections 1.203-1.229 s.
set -euo pipefail

rtt_ms=600 runs=20 within=0.65 server_args=""
bin="$(cd "$(dirname "$0")/.." && pwd)/target/release"
while [ $# -gt 0 ]; do
    case "$1" in
        --rtt-ms) rtt_ms=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --within) within=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --server-args) server_args=$2; shift 2 ;;
        -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
        *) echo "resume_first_byte.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
for tool in sift-server sift-client sift-link; do
    [ -x "$bin/$tool" ] || { echo "resume_first_byte.sh: $bin/$tool missing (cargo build --release -p sift-bin)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/sift-resume-first-byte.XXXXXX)
pids=()
cleanup() {
    [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/root" "$work/state"
head -c 100000 /dev/urandom > "$work/root/file.bin"
half=$((rtt_ms / 2))
port=$((20000 + RANDOM % 20000))
link=$((port + 1))

# shellcheck disable=SC2086 # server_args is a list of words
"$bin/sift-server" --listen "127.0.0.1:$port" --root "$work/root" --state-dir "$work/state" \
    $server_args > "$work/server.log" 2>&1 &
pids+=($!)
"$bin/sift-link" --listen "127.0.0.1:$link" --to "127.0.0.1:$port" \
    --forward "delay ${half}ms" --reverse "delay ${half}ms" > "$work/link.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q "^listening" "$work/server.log" && break; sleep 0.1; done
pin=$(grep -o 'SHA256:[0-9a-f]*' "$work/server.log" | head -1)
[ -n "$pin" ] || { echo "resume_first_byte.sh: the server did not start" >&2; cat "$work/server.log" >&2; exit 1; }
grep "^listening" "$work/server.log" | sed 's/^/server: /'

for run in $(seq "$runs"); do
    XDG_DATA_HOME="$work/client-$run" "$bin/sift-client" get \
        "sift://127.0.0.1:$link/file.bin" -o "$work/out.bin" "--pin=$pin" \
        --json --repeat 2 > "$work/reports.json" 2> "$work/client.log" \
        || { echo "resume_first_byte.sh: run $run failed:" >&2; cat "$work/client.log" >&2; exit 1; }
    cmp -s "$work/out.bin" "$work/root/file.bin" || { echo "resume_first_byte.sh: run $run: file differs" >&2; exit 1; }
    python3 -c '
import json, sys
first, second = [json.loads(line) for line in open(sys.argv[1])]
if not second["tls_resumed"]:
    sys.exit("the second connection did not resume")
print(sys.argv[2], first["time_to_first_byte_s"], second["time_to_first_byte_s"], second["zero_rtt"],
      "careful-resume" if second.get("careful_resume") else "-")
' "$work/reports.json" "$run" | tee -a "$work/runs" \
        | awk '{ printf "run %2d: first connection %.3f s, resumed %.3f s (0-RTT %s, %s)\n", $1, $2, $3, $4, $5 }'
done

cut -d' ' -f3 "$work/runs" | sort -n | awk -v within="$within" -v rtt="$rtt_ms" -v runs="$runs" '
    { t[NR] = $1; if ($1 > within) late++ }
    END {
        printf "resumed first byte: median %.3f s, max %.3f s over %d runs (RTT %d ms); %d later than %s s\n",
            t[int((NR + 1) / 2)], t[NR], runs, rtt, late, within
        exit late > 0
    }'
