#!/bin/bash
# usage: run_hq.sh BINDIR TAG [perf]; prints goodput and CPU of both
BIN=$1; TAG=$2; PERF=$3
OUT=/tmp/lbp/out/$TAG; rm -rf $OUT; mkdir -p $OUT/home
export HOME=$OUT/home
PORT=$((20000 + RANDOM % 20000))
if [ -n "$PERF" ]; then SP="perf record -F 2000 -o $OUT/server.perf --"; CP="perf record -F 2000 -o $OUT/client.perf --"; fi
/usr/bin/time -f "%w %c %R %U %S" -o $OUT/server.time $SP $BIN/sift-server --listen 127.0.0.1:$PORT --root /tmp/lbp/root > $OUT/server.out 2> $OUT/server.err &
SPID=$!
sleep 0.5
/usr/bin/time -f "%w %c %R %U %S" -o $OUT/client.time $CP $BIN/sift-client get https://127.0.0.1:$PORT/file -o /dev/null --json > $OUT/client.json 2> $OUT/client.err
sleep 0.2
SRV=$(pgrep -P $SPID); kill -TERM $SRV; wait $SPID
python3 - $OUT <<'PY'
import json,sys
o=sys.argv[1]
j=json.loads(open(o+'/client.json').read().strip().splitlines()[-1])
c=sum(map(float,open(o+'/client.time').read().split()[-2:]))
s=sum(map(float,open(o+'/server.time').read().split()[-2:]))
print(f"{o.split('/')[-1]}: {j['goodput_bps']/1e9:.2f} Gb/s client {c:.2f} server {s:.2f} total {c+s:.2f} sha {j['files'][0]['sha256'][:8]}")
PY
