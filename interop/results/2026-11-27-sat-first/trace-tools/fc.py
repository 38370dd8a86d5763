import json,sys
f=sys.argv[1]; lo,hi=float(sys.argv[2]),float(sys.argv[3])
maxoff=0; rows=[]
for line in open(f):
    line=line.strip().lstrip('\x1e')
    if not line: continue
    e=json.loads(line); t=e.get('time',0)
    if e.get('name')=='quic:packet_sent':
        for fr in e['data'].get('frames',[]):
            if fr['frame_type']=='stream':
                end=fr.get('offset',0)+fr.get('length',0)
                if end>maxoff: maxoff=end; newdata=True
            if fr['frame_type']=='stream_data_blocked' and lo<=t<=hi: rows.append((t,'BLOCKED',fr))
    if e.get('name')=='quic:packet_received' and lo<=t<=hi:
        for fr in e['data'].get('frames',[]):
            if fr['frame_type'] in('max_stream_data','max_data'): rows.append((t,fr['frame_type'],fr.get('maximum'), 'maxoff_sent', maxoff))
    if e.get('name')=='quic:packet_sent' and lo<=t<=hi:
        rows.append((t,'sent_maxoff',maxoff))
# condense: print every 20ms the maxoff, plus all frames
last=-1
for r in rows:
    if r[1]=='sent_maxoff':
        b=int(r[0]//20)
        if b!=last: print(f"{r[0]:.0f} maxoff {r[2]}"); last=b
    else: print(r)
