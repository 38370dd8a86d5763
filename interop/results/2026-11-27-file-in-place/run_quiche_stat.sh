#!/bin/bash
# usage: run_quiche_stat.sh TAG: the same download from quiche-server to
# quiche-client (interop/target/release, 8972-byte datagrams as
# sift-compare gives them on loopback), with the same /proc/stat figures.
TAG=$1; OUT=/tmp/lbp/out/$TAG; rm -rf $OUT; mkdir -p $OUT
B=${B:-interop/target/release}  # from the repository root (main's build when this ran)
PORT=$((20000 + RANDOM % 20000))
/usr/bin/time -f "%w %c %R %U %S" -o $OUT/server.time $B/quiche-server --listen 127.0.0.1:$PORT --root /tmp/lbp/root --cert-dir $OUT --max-datagram 8972 > $OUT/server.out 2> $OUT/server.err &
SPID=$!
sleep 0.5
head -1 /proc/stat > $OUT/stat0
/usr/bin/time -f "%w %c %R %U %S" -o $OUT/client.time $B/quiche-client get quic://127.0.0.1:$PORT/file -o /dev/null --ca $OUT/cert.pem --json --max-datagram 8972 > $OUT/client.json 2> $OUT/client.err
head -1 /proc/stat > $OUT/stat1
sleep 0.2
SRV=$(pgrep -P $SPID); kill -TERM $SRV; wait $SPID
python3 - $OUT <<'PY'
import json,sys
o=sys.argv[1]
j=json.loads(open(o+'/client.json').read().strip().splitlines()[-1])
c=sum(map(float,open(o+'/client.time').read().split()[-2:]))
s=sum(map(float,open(o+'/server.time').read().split()[-2:]))
a=list(map(int,open(o+'/stat0').read().split()[1:])); b=list(map(int,open(o+'/stat1').read().split()[1:]))
d=[y-x for x,y in zip(a,b)]; t=sum(d)
names='user nice system idle iowait irq softirq steal'.split()
st=' '.join(f"{n}={100*v/t:.0f}%" for n,v in zip(names,d) if v)
print(f"{o.split('/')[-1]}: {j.get('goodput_bps',0)/1e9:.2f} Gb/s client {c:.2f} server {s:.2f} total {c+s:.2f} | {st}")
PY
