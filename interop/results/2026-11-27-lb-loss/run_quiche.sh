#!/bin/bash
# usage: runq.sh TAG
TAG=$1; shift
B=${B:-interop/target/release}  # from the repository root (the lb-loss checkout's build when this ran)
OUT=/tmp/lbl/out/$TAG; rm -rf $OUT; mkdir -p $OUT
PORT=$((20000 + RANDOM % 20000))
R0=$(nstat -az UdpRcvbufErrors Udp6RcvbufErrors | awk '/Rcvbuf/{s+=$2} END{print s}')
L0="$(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -v -o $OUT/server.time $B/quiche-server --listen 127.0.0.1:$PORT --root /tmp/lbl/root --cc cubic --cert-dir $OUT/cert --max-datagram 8972 > $OUT/server.out 2> $OUT/server.err &
SPID=$!
sleep 0.5
/usr/bin/time -v -o $OUT/client.time $B/quiche-client get quic://127.0.0.1:$PORT/file -o /dev/null --cc cubic --json --ca $OUT/cert/cert.pem --max-datagram 8972 "$@" > $OUT/client.json 2> $OUT/client.err
sleep 0.2
kill -INT $(pgrep -P $SPID); sleep 0.3; kill $(pgrep -P $SPID) 2>/dev/null; wait $SPID
R1=$(nstat -az UdpRcvbufErrors Udp6RcvbufErrors | awk '/Rcvbuf/{s+=$2} END{print s}')
echo "rcvbuf_errors $((R1-R0))" > $OUT/nstat
echo "load_before $L0 load_after $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/nstat
