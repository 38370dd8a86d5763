#!/bin/bash
BIN=$1; OUT=/tmp/lbp/out/cs; rm -rf $OUT; mkdir -p $OUT/home; export HOME=$OUT/home
PORT=$((20000 + RANDOM % 20000))
$BIN/sift-server --listen 127.0.0.1:$PORT --root /tmp/lbp/root $SERVER_ARGS > $OUT/server.out 2> $OUT/server.err &
SPID=$!
sleep 0.5
$BIN/sift-client get https://127.0.0.1:$PORT/file -o /dev/null --json > $OUT/client.json 2> $OUT/client.err
for t in /proc/$SPID/task/*; do echo "$(cat $t/comm): $(grep ctxt $t/status | awk '{print $2}' | tr '\n' ' ') cpu $(awk '{print $14+$15}' $t/stat)"; done
kill -INT $SPID; wait
