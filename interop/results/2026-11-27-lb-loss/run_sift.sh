#!/bin/bash
# usage: run.sh BINDIR TAG [extra client args]; SERVER_ARGS env for the server
BIN=$1; TAG=$2; shift 2
PORT=$((20000 + RANDOM % 20000))
OUT=/tmp/lbl/out/$TAG; rm -rf $OUT; mkdir -p $OUT
export HOME=$OUT/home; mkdir -p $HOME
R0=$(nstat -az UdpRcvbufErrors Udp6RcvbufErrors | awk '/Rcvbuf/{s+=$2} END{print s}')
L0="$(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -v -o $OUT/server.time $BIN/sift-server --listen 127.0.0.1:$PORT --root /tmp/lbl/root $SERVER_ARGS > $OUT/server.out 2> $OUT/server.err &
SPID=$!
sleep 0.5
/usr/bin/time -v -o $OUT/client.time $BIN/sift-client get sift://127.0.0.1:$PORT/file -o /dev/null --json "$@" > $OUT/client.json 2> $OUT/client.err
sleep 0.2
kill -INT $(pgrep -P $SPID); wait $SPID
R1=$(nstat -az UdpRcvbufErrors Udp6RcvbufErrors | awk '/Rcvbuf/{s+=$2} END{print s}')
echo "rcvbuf_errors $((R1-R0))" > $OUT/nstat
echo "load_before $L0 load_after $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/nstat
