#!/bin/bash
# one download under perf sched record (system-wide); BIN TAG
BIN=$1; TAG=$2
OUT=/tmp/lbp/out/$TAG; rm -rf $OUT; mkdir -p $OUT/home
export HOME=$OUT/home
PORT=$((20000 + RANDOM % 20000))
$BIN/sift-server --listen 127.0.0.1:$PORT --root /tmp/lbp/root $SERVER_ARGS > $OUT/server.out 2> $OUT/server.err &
SPID=$!
sleep 0.5
perf sched record -o $OUT/sched.data -- $BIN/sift-client get https://127.0.0.1:$PORT/file -o /dev/null --json > $OUT/client.json 2> $OUT/client.err
kill -TERM $(pgrep -P $SPID) 2>/dev/null; kill -TERM $SPID 2>/dev/null; wait $SPID
perf sched timehist -i $OUT/sched.data -s 2>/dev/null | sed -n '/Runtime summary/,$p' | grep -E "sift|comm|idle|Total" | head -30
