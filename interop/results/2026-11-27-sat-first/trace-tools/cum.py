import json,sys
for f in sys.argv[1:]:
    ts=[]; rt=None
    for line in open(f):
        line=line.strip().lstrip('\x1e')
        if not line: continue
        e=json.loads(line)
        if e.get('name')=='quic:packet_sent' and any(fr['frame_type']=='stream' for fr in e['data'].get('frames',[])):
            ts.append(e['time'])
        if e.get('name')=='quic:packet_received' and rt is None and any(fr['frame_type']=='stream' for fr in e['data'].get('frames',[])):
            rt=e['time']
    marks=[10,30,70,150,310,630,1270,2550,5110,10230,len(ts)]
    print(f.split('/')[-2], 'request at', rt, 'ms; stream packets', len(ts))
    print('  ', ' '.join(f"{m}:{ts[m-1]:.0f}" for m in marks if m<=len(ts)))
