#!/usr/bin/env bash
# Builds two network namespaces, sift-a (client, 10.77.0.1) and sift-b
# (server), joined by a veth pair, and impairs the path with real
# `tc qdisc … netem` where the kernel has sch_netem. Otherwise (or when the
# spec uses sift-only options such as ber or corrupt-where) it puts a third
# namespace, sift-m, on the path and runs sift-link there. Either way the
# client sends to 10.77.0.2:PORT. Idempotent: tears down any previous setup
# first; cleans up after itself if it fails half-way. Needs root.
#
# Usage: sudo interop/netem/netns-up.sh [--forward SPEC] [--reverse SPEC]
#            [--port PORT] [--seed N] [--sift-link]
#   --forward SPEC   impairment client → server, netem syntax (default: none)
#   --reverse SPEC   impairment server → client (default: none)
#   --port PORT      UDP port the server listens on (default 4433)
#   --seed N         seed for sift-link's models (default 1)
#   --sift-link      use sift-link even where sch_netem exists
# Example:
#   sudo interop/netem/netns-up.sh --forward "delay 60ms rate 1600kbit limit 12 loss 1%" --reverse "delay 60ms"
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/common.sh"

FORWARD="" REVERSE="" PORT=4433 SEED=1 FORCE_SIFT_LINK=0
while [ $# -gt 0 ]; do
    case "$1" in
        --forward) FORWARD=${2?--forward needs a SPEC}; shift 2 ;;
        --reverse) REVERSE=${2?--reverse needs a SPEC}; shift 2 ;;
        --port) PORT=${2?--port needs a PORT}; shift 2 ;;
        --seed) SEED=${2?--seed needs N}; shift 2 ;;
        --sift-link) FORCE_SIFT_LINK=1; shift ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
require_root
case "$PORT" in ''|*[!0-9]*) die "--port must be a number, got $PORT" ;; esac

"$HERE/netns-down.sh"
mkdir -p "$STATE_DIR"

# If anything below fails, leave nothing half-built behind.
built=0
cleanup_on_failure() { [ "$built" -eq 1 ] || "$HERE/netns-down.sh" || true; }
trap cleanup_on_failure EXIT

MODE=netem
if [ "$FORCE_SIFT_LINK" -eq 1 ]; then
    MODE=sift-link
    say "--sift-link given: using sift-link inside the namespaces"
elif printf '%s %s\n' "$FORWARD" "$REVERSE" | grep -Eqw "$SIFT_ONLY_OPTIONS"; then
    MODE=sift-link
    say "the spec uses sift-only options ($SIFT_ONLY_OPTIONS): using sift-link inside the namespaces"
elif ! kernel_has_netem; then
    MODE=sift-link
    say "sch_netem not available on this kernel: using sift-link inside the namespaces"
fi

ip netns add "$NS_CLIENT"
ip netns add "$NS_SERVER"
ip -n "$NS_CLIENT" link set lo up
ip -n "$NS_SERVER" link set lo up

if [ "$MODE" = netem ]; then
    ip link add sift-a0 netns "$NS_CLIENT" type veth peer name sift-b0 netns "$NS_SERVER"
    ip -n "$NS_CLIENT" addr add "$CLIENT_IP/30" dev sift-a0
    ip -n "$NS_SERVER" addr add "$SERVER_IP/30" dev sift-b0
    ip -n "$NS_CLIENT" link set sift-a0 up
    ip -n "$NS_SERVER" link set sift-b0 up
    # netem shapes what leaves an interface: forward on the client's side,
    # reverse on the server's. An empty spec leaves the default qdisc.
    # shellcheck disable=SC2086 # the spec is a list of words on purpose
    [ -z "$FORWARD" ] || ip netns exec "$NS_CLIENT" tc qdisc add dev sift-a0 root netem $FORWARD ||
        die "tc rejected --forward \"$FORWARD\""
    # shellcheck disable=SC2086
    [ -z "$REVERSE" ] || ip netns exec "$NS_SERVER" tc qdisc add dev sift-b0 root netem $REVERSE ||
        die "tc rejected --reverse \"$REVERSE\""
    say "netem: forward \"${FORWARD:-none}\" on $NS_CLIENT/sift-a0, reverse \"${REVERSE:-none}\" on $NS_SERVER/sift-b0"
    say "note: netem's corrupt flips bits the UDP checksum then catches, so the kernel drops those datagrams"
    RELAY_PID=""
else
    SIFT_LINK_BIN=$(find_sift_link) ||
        die "sift-link not found: build it (cargo build --release -p sift-bin --bin sift-link) or set SIFT_LINK=/path/to/sift-link"
    ip netns add "$NS_MIDDLE"
    ip -n "$NS_MIDDLE" link set lo up
    ip link add sift-a0 netns "$NS_CLIENT" type veth peer name sift-m0 netns "$NS_MIDDLE"
    ip link add sift-m1 netns "$NS_MIDDLE" type veth peer name sift-b0 netns "$NS_SERVER"
    ip -n "$NS_CLIENT" addr add "$CLIENT_IP/30" dev sift-a0
    ip -n "$NS_MIDDLE" addr add "$SERVER_IP/30" dev sift-m0
    ip -n "$NS_MIDDLE" addr add 10.77.0.5/30 dev sift-m1
    ip -n "$NS_SERVER" addr add 10.77.0.6/30 dev sift-b0
    for dev in sift-m0 sift-m1; do ip -n "$NS_MIDDLE" link set "$dev" up; done
    ip -n "$NS_CLIENT" link set sift-a0 up
    ip -n "$NS_SERVER" link set sift-b0 up
    ip netns exec "$NS_MIDDLE" "$SIFT_LINK_BIN" --listen "$SERVER_IP:$PORT" --to "10.77.0.6:$PORT" \
        --forward "$FORWARD" --reverse "$REVERSE" --seed "$SEED" </dev/null >"$RELAY_LOG" 2>&1 &
    RELAY_PID=$!
    for _ in $(seq 100); do
        grep -q "listening on" "$RELAY_LOG" 2>/dev/null && break
        kill -0 "$RELAY_PID" 2>/dev/null || die "sift-link failed to start: $(cat "$RELAY_LOG")"
        sleep 0.1
    done
    grep -q "listening on" "$RELAY_LOG" || die "sift-link did not start within 10 s: $(cat "$RELAY_LOG")"
    say "sift-link (pid $RELAY_PID) in $NS_MIDDLE: $SERVER_IP:$PORT -> 10.77.0.6:$PORT; log and counters in $RELAY_LOG"
fi

cat >"$STATE_FILE" <<STATE
MODE=$MODE
PORT=$PORT
SERVER_IP=$SERVER_IP
RELAY_PID=$RELAY_PID
STATE
built=1
say "ready: in $NS_SERVER serve on 0.0.0.0:$PORT; in $NS_CLIENT send to $SERVER_IP:$PORT"
say "  e.g. ip netns exec $NS_CLIENT <client command>; tear down with $HERE/netns-down.sh"
