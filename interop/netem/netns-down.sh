#!/usr/bin/env bash
# Tears down what netns-up.sh built: stops the sift-link relay it started
# (by the pid it recorded) and deletes the sift-a, sift-m and sift-b
# namespaces with their veth pairs. Safe to run any number of times.
#
# Usage: sudo interop/netem/netns-down.sh
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
require_root "$@"

if [ -f "$STATE_FILE" ]; then
    RELAY_PID=$(sed -n 's/^RELAY_PID=//p' "$STATE_FILE")
    # Only our relay: the pid must still be a sift-link process.
    if [ -n "$RELAY_PID" ] && [ -r "/proc/$RELAY_PID/cmdline" ] &&
        tr '\0' ' ' <"/proc/$RELAY_PID/cmdline" | grep -q sift-link; then
        kill -TERM "$RELAY_PID" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$RELAY_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$RELAY_PID" 2>/dev/null && kill -KILL "$RELAY_PID" 2>/dev/null || true
        say "stopped sift-link (pid $RELAY_PID); its counters are in $RELAY_LOG"
    fi
fi

for ns in "$NS_CLIENT" "$NS_MIDDLE" "$NS_SERVER"; do
    if ns_exists "$ns"; then
        ip netns del "$ns"
        say "deleted namespace $ns"
    fi
done
rm -f "$STATE_FILE"
