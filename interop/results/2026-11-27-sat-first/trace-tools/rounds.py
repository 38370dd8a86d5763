import json,sys
f=sys.argv[1]
ts=[]; rate=None; rates=[]
for line in open(f):
    line=line.strip().lstrip('\x1e')
    if not line: continue
    e=json.loads(line)
    if e.get('name')=='quic:recovery_metrics_updated' and 'pacing_rate' in e['data']: rate=e['data']['pacing_rate']
    if e.get('name')=='quic:packet_sent' and any(fr['frame_type']=='stream' for fr in e['data'].get('frames',[])):
        ts.append(e['time']); rates.append(rate)
b=[0,10,30,70,150,310,630,1270,2550,5110,10230,15000]
for i in range(len(b)-1):
    a,z=b[i],min(b[i+1],len(ts))-1
    if a>=len(ts): break
    print(f"round {i+1}: pkts {a+1}-{z+1} first {ts[a]:.0f} last {ts[z]:.0f} span {ts[z]-ts[a]:.0f} ms; pacing {(rates[a] or 0)/1e6:.2f}..{(rates[z] or 0)/1e6:.2f} Mb/s")
