import json,sys,statistics as st,re
def load(t):
    j=json.load(open(f'out/{t}/client.json'))
    def cpu(f):
        s=0
        for l in open(f'out/{t}/{f}.time'):
            if 'User time' in l or 'System time' in l: s+=float(l.split(':')[1])
        return s
    n=open(f'out/{t}/nstat').read()
    rb=int(re.search(r'rcvbuf_errors (\d+)',n).group(1))
    ld=re.search(r'load_before (\S+)',n).group(1)
    return dict(g=j['goodput_bps']/1e9,rtx=j.get('retransmitted_packets',0),lost=j.get('lost_packets'),rb=rb,cc=cpu('client'),cs=cpu('server'),load=float(ld))
for prefix in sys.argv[1:]:
    import glob,os
    runs=sorted(glob.glob(f'out/{prefix}-*'))
    rs=[load(os.path.basename(r)) for r in runs]
    m=lambda k: st.median([r[k] for r in rs])
    print(f"{prefix}: n={len(rs)} goodput {m('g'):.2f} Gb/s ({min(r['g'] for r in rs):.2f}-{max(r['g'] for r in rs):.2f}) rtx {m('rtx'):.0f} ({min(r['rtx'] for r in rs)}-{max(r['rtx'] for r in rs)}) rcvbuf {m('rb'):.0f} ({min(r['rb'] for r in rs)}-{max(r['rb'] for r in rs)}) cpu client {m('cc'):.2f} server {m('cs'):.2f} sum {st.median([r['cc']+r['cs'] for r in rs]):.2f} load {min(r['load'] for r in rs):.1f}-{max(r['load'] for r in rs):.1f}")
