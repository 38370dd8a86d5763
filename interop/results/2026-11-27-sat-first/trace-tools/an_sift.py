import json,sys,glob,collections
f=sys.argv[1]
ev=[]
for line in open(f):
    line=line.strip().lstrip('\x1e')
    if not line: continue
    e=json.loads(line)
    if 'time' in e: ev.append(e)
# time series per 300ms bucket
B=300.0
buck=collections.defaultdict(lambda: dict(sent=0,sentbytes=0,stream_bytes=0,cwnd=None,bif_max=0,ssthresh=None,blocked=0,msd=None,md=None,acks=0))
last=dict(cwnd=None,ssthresh=None)
frames_recv=collections.Counter(); frames_sent=collections.Counter()
msd_times=[]; blocked=[]
for e in ev:
    t=e['time']; b=buck[int(t//B)]; d=e.get('data',{})
    n=e['name']
    if n=='quic:recovery_metrics_updated':
        if 'congestion_window' in d: last['cwnd']=d['congestion_window']
        if 'ssthresh' in d: last['ssthresh']=d['ssthresh']
        b['cwnd']=last['cwnd']; b['ssthresh']=last['ssthresh']
        if 'bytes_in_flight' in d: b['bif_max']=max(b['bif_max'],d['bytes_in_flight'])
    elif n=='quic:packet_sent':
        b['sent']+=1
        for fr in d.get('frames',[]):
            frames_sent[fr['frame_type']]+=1
            if fr['frame_type']=='stream': b['stream_bytes']+=fr.get('length',0) or fr.get('raw',{}).get('payload_length',0)
            if 'blocked' in fr['frame_type']: blocked.append((t,fr)); b['blocked']+=1
    elif n=='quic:packet_received':
        for fr in d.get('frames',[]):
            frames_recv[fr['frame_type']]+=1
            if fr['frame_type'] in ('max_stream_data','max_data'): msd_times.append((t,fr))
            if fr['frame_type']=='ack': b['acks']+=1
    elif n not in ('quic:packet_sent',):
        pass
print('frames sent',frames_sent); print('frames recv',frames_recv)
print('blocked',blocked[:20])
print('maxdata', [(round(t), fr.get('maximum')) for t,fr in msd_times][:60])
print('t_s  sent  cwnd_pk  bif_max_pk ssthresh acks blocked')
for k in sorted(buck):
    b=buck[k]
    print(f"{k*B/1000:5.1f} {b['sent']:5d} {b['cwnd'] and b['cwnd']//1350!s:>6} {b['bif_max']//1350:6d} {b['ssthresh'] and b['ssthresh']//1350!s:>8} {b['acks']:4d} {b['blocked']}")
