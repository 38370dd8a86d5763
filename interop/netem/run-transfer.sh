#!/usr/bin/env bash
# Runs a server command in sift-b and a client command in sift-a over an
# impaired path (netns-up.sh: real netem where the kernel has it, sift-link
# otherwise), then tears everything down, whatever happens. Exits with the
# client's status. Needs root.
#
# Usage: sudo interop/netem/run-transfer.sh [netns-up options] [--server CMD] [--client CMD]
#   netns-up options: --forward SPEC --reverse SPEC --port PORT --seed N --sift-link
#   --server CMD   run in sift-b (default: a python3 UDP echo server)
#   --client CMD   run in sift-a (default: a python3 UDP pinger: loss and RTT)
# Both commands run under sh -c with SERVER_IP (what the client sends to)
# and PORT (what the server listens on) in the environment.
#
# Examples:
#   sudo interop/netem/run-transfer.sh --forward "delay 20ms loss 10%" --reverse "delay 20ms"
#   sudo interop/netem/run-transfer.sh --forward "delay 60ms rate 1600kbit limit 12 loss 1%" \
#       --reverse "delay 60ms" \
#       --server 'sift-server --listen 0.0.0.0:$PORT --root /srv/files' \
#       --client 'sift-client get sift://$SERVER_IP:$PORT/big.bin -o /tmp/big.bin'
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/common.sh"

# A UDP echo server and a pinger that reports loss and RTT: enough to see
# the impairment until the sift binaries exist.
DEFAULT_SERVER='exec python3 -u -c "
import os, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((\"0.0.0.0\", int(os.environ[\"PORT\"])))
while True:
    data, peer = s.recvfrom(65535)
    s.sendto(data, peer)
"'
DEFAULT_CLIENT='exec python3 -u -c "
import os, select, socket, struct, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
target = (os.environ[\"SERVER_IP\"], int(os.environ[\"PORT\"]))
count, interval, rtts = 200, 0.01, []
def receive_until(deadline):
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([s], [], [], left)[0]:
            return
        data = s.recv(65535)
        rtts.append((time.monotonic() - struct.unpack(\"!Id\", data[:12])[1]) * 1e3)
start = time.monotonic()
for i in range(count):
    s.sendto(struct.pack(\"!Id\", i, time.monotonic()) + bytes(988), target)
    receive_until(start + (i + 1) * interval)
receive_until(time.monotonic() + 2.0)
rtts.sort()
print(f\"sent {count}, echoed {len(rtts)} ({100 * (1 - len(rtts) / count):.1f}% lost)\"
      + (f\", RTT min {rtts[0]:.1f} ms, median {rtts[len(rtts) // 2]:.1f} ms, max {rtts[-1]:.1f} ms\" if rtts else \"\"))
"'

UP_ARGS=() SERVER_CMD=$DEFAULT_SERVER CLIENT_CMD=$DEFAULT_CLIENT PORT=4433
while [ $# -gt 0 ]; do
    case "$1" in
        --forward|--reverse|--seed) UP_ARGS+=("$1" "${2?$1 needs a value}"); shift 2 ;;
        --port) PORT=${2?--port needs a PORT}; UP_ARGS+=(--port "$PORT"); shift 2 ;;
        --sift-link) UP_ARGS+=(--sift-link); shift ;;
        --server) SERVER_CMD=${2?--server needs a command}; shift 2 ;;
        --client) CLIENT_CMD=${2?--client needs a command}; shift 2 ;;
        -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
require_root

SERVER_PID="" CLIENT_PID=""
# Each command runs in its own process group (setsid), so stopping it
# stops everything it started, and nothing else.
stop_group() {
    local pid=$1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    local status=$?
    stop_group "$CLIENT_PID"
    stop_group "$SERVER_PID"
    local mode=""
    [ ! -f "$STATE_FILE" ] || mode=$(sed -n 's/^MODE=//p' "$STATE_FILE")
    "$HERE/netns-down.sh" || true
    if [ "$mode" = sift-link ] && [ -f "$RELAY_LOG" ]; then
        say "--- sift-link ---"
        cat "$RELAY_LOG" >&2
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$HERE/netns-up.sh" "${UP_ARGS[@]}"
MODE=$(sed -n 's/^MODE=//p' "$STATE_FILE")

export SERVER_IP PORT
setsid ip netns exec "$NS_SERVER" sh -c "$SERVER_CMD" &
SERVER_PID=$!
# Wait until something in sift-b listens on the UDP port (10 s at most).
for _ in $(seq 100); do
    if ip netns exec "$NS_SERVER" ss -Huln "sport = :$PORT" | grep -q .; then break; fi
    kill -0 "$SERVER_PID" 2>/dev/null || die "the server command exited before listening on UDP port $PORT"
    sleep 0.1
done
ip netns exec "$NS_SERVER" ss -Huln "sport = :$PORT" | grep -q . ||
    die "nothing listens on UDP port $PORT in $NS_SERVER after 10 s"

say "running the client in $NS_CLIENT ($MODE path)"
client_status=0
# In the background and waited for, so a signal interrupts the wait and
# the cleanup runs at once.
setsid ip netns exec "$NS_CLIENT" sh -c "$CLIENT_CMD" &
CLIENT_PID=$!
wait "$CLIENT_PID" || client_status=$?
CLIENT_PID=""
if [ "$MODE" = netem ]; then
    ip netns exec "$NS_CLIENT" tc -s qdisc show dev sift-a0 >&2 || true
    ip netns exec "$NS_SERVER" tc -s qdisc show dev sift-b0 >&2 || true
fi
exit "$client_status"
