#!/usr/bin/env bash
# The run behind many_connections.md: every server in turn, REPS times
# (interleaved), one line each: the server, which sift binaries, the
# 1-minute load average before the row, the UDP receive-buffer errors of
# the whole host during the row (/proc/net/snmp RcvbufErrors: the server's
# socket and the load generator's), then many_downloads.sh's line.
#   BEFORE=/tmp/many-before AFTER=/tmp/many-after REPS=3 many-run.sh > many-run.txt
# ROWS picks the rows, KIND:BIN[:EXTRA] each (EXTRA: one sift-server flag
# and its value, comma-joined, e.g. sift:after:--versions,v1).
set -u
top="$(cd "$(dirname "$0")/../../.." && pwd)"
before=${BEFORE:-/tmp/many-before} after=${AFTER:-/tmp/many-after} reps=${REPS:-3}
# One load generator for every row (the fixed one, which also sums the
# sift servers' trailers), so that only the server differs.
load="$after/many_gets"
rcvbuf() { awk '/^Udp:/ && $2 ~ /^[0-9]/ {print $6}' /proc/net/snmp; }
for rep in $(seq "$reps"); do
    for row in ${ROWS:-sift:before sift:after sift-hq:after quinn:- quiche:-}; do
        IFS=: read -r kind which extra <<< "$row"
        case "$which" in before) bin=$before ;; *) bin=$after ;; esac
        flags=()
        [ -n "$extra" ] && IFS=, read -r -a flags <<< "$extra" && flags=(-- "${flags[@]}")
        load1=$(cut -d' ' -f1 /proc/loadavg)
        errors=$(rcvbuf)
        line=$("$top/benches/many_downloads.sh" --server "$kind" --bin "$bin" --load "$load" \
            --peer-bin "$top/interop/target/release" "${flags[@]}" 2>&1 | tail -1)
        echo "rep=$rep bin=$which${extra:+ extra=$extra} load1=$load1 host_rcvbuf_errors=$(( $(rcvbuf) - errors )) $line"
    done
done
