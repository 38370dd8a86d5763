import json,sys
# Time-weighted share of the transfer in which the window had >= 2 packets of room
# (cwnd - bytes_in_flight >= 2700 B): the sender could send but did not (pacer or flow control).
for f in sys.argv[1:]:
    cw=None; bif=0; last=None; room=0.0; total=0.0; start=None; end=None
    evs=[]
    for line in open(f):
        line=line.strip().lstrip('\x1e')
        if not line: continue
        e=json.loads(line)
        if e.get('name')=='quic:recovery_metrics_updated': evs.append(e)
        if e.get('name')=='quic:packet_sent' and any(fr['frame_type']=='stream' for fr in e['data'].get('frames',[])):
            if start is None: start=e['time']
            end=e['time']
    for e in evs:
        t=e['time']; d=e['data']
        if last is not None and start<=last<=end:
            dt=min(t,end)-last
            if dt>0:
                total+=dt
                if cw is not None and cw-bif>=2700: room+=dt
        if 'congestion_window' in d: cw=d['congestion_window']
        if 'bytes_in_flight' in d: bif=d['bytes_in_flight']
        last=t
    print(f"{f.split('/')[-3]}/{f.split('/')[-2]}: {room/1000:.2f} s of {total/1000:.2f} s with window room >= 2 packets ({100*room/total:.0f}%)")
