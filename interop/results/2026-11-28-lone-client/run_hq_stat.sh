#!/bin/bash
# usage: [SCHEME=sift] run_hq.sh BINDIR TAG [perf]
# One 1 GiB download of /tmp/lbp/root/file on loopback over hq-interop
# (https, the default) or sift's own protocol (SCHEME=sift); prints the
# goodput and the CPU seconds of client and server. The first fields of
# OUT/client.time and OUT/server.time are the context switches
# (voluntary, involuntary) and minor page faults. With a third argument,
# each process runs under `perf record`.
BIN=$1; TAG=$2; PERF=$3; SCHEME=${SCHEME:-https}
OUT=/tmp/lbp/out/$TAG; rm -rf $OUT; mkdir -p $OUT/home
export HOME=$OUT/home
PORT=$((20000 + RANDOM % 20000))
if [ -n "$PERF" ]; then SP="perf record -F 2000 -o $OUT/server.perf --"; CP="perf record -F 2000 -o $OUT/client.perf --"; fi
/usr/bin/time -f "%w %c %R %U %S" -o $OUT/server.time $SP $BIN/sift-server --listen 127.0.0.1:$PORT --root /tmp/lbp/root $SERVER_ARGS > $OUT/server.out 2> $OUT/server.err &
SPID=$!
sleep 0.5
head -1 /proc/stat > $OUT/stat0; /usr/bin/time -f "%w %c %R %U %S" -o $OUT/client.time $CP $BIN/sift-client get $SCHEME://127.0.0.1:$PORT/file -o /dev/null --json > $OUT/client.json 2> $OUT/client.err
head -1 /proc/stat > $OUT/stat1; sleep 0.2
SRV=$(pgrep -P $SPID); kill -TERM $SRV; wait $SPID
python3 - $OUT <<'PY'
import json,sys
o=sys.argv[1]
j=json.loads(open(o+'/client.json').read().strip().splitlines()[-1])
c=sum(map(float,open(o+'/client.time').read().split()[-2:]))
s=sum(map(float,open(o+'/server.time').read().split()[-2:]))
sha=(j.get('files') or [j])[0]['sha256'][:8]
a=list(map(int,open(o+'/stat0').read().split()[1:])); b=list(map(int,open(o+'/stat1').read().split()[1:]))
d=[y-x for x,y in zip(a,b)]; t=sum(d)
names='user nice system idle iowait irq softirq steal'.split()
st=' '.join(f"{n}={100*v/t:.0f}%" for n,v in zip(names,d) if v)
print(f"{o.split('/')[-1]}: {j['goodput_bps']/1e9:.2f} Gb/s client {c:.2f} server {s:.2f} total {c+s:.2f} sha {sha} | {st}")
PY
