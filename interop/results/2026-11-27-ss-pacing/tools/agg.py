import json, os, sys, statistics, math, collections
exp = sys.argv[1]
base = '/tmp/ssp'
agg = collections.defaultdict(list)
for sc in sorted(os.listdir(f'{base}/off/{exp}')):
    p = f'{base}/off/{exp}/{sc}/results.json'; q = f'{base}/on/{exp}/{sc}/results.json'
    if not os.path.exists(p) or not os.path.exists(q): continue
    a = json.load(open(p)); b = json.load(open(q))
    nflows = len(a['runs'][0]['flows'])
    for i in range(nflows):
        cc = a['runs'][0]['flows'][i]['cc']
        ga = statistics.median([r['flows'][i]['goodput_bps'] or 0 for r in a['runs']])
        gb = statistics.median([r['flows'][i]['goodput_bps'] or 0 for r in b['runs']])
        # per-seed log ratio mean
        pr = [math.log((rb['flows'][i]['goodput_bps'] or 1)/(ra['flows'][i]['goodput_bps'] or 1)) for ra, rb in zip(a['runs'], b['runs'])]
        key = ('sharing:' if nflows > 1 and 'sharing' in sc else '') + cc
        if len(sys.argv) > 2 and sys.argv[2] in sc:
            print(sc, i, cc, round(ga/1e6,2), round(gb/1e6,2))
        agg[key].append((ga, gb, statistics.mean(pr)))
print(f'{"cc":24} n  same up>1% down>1%  geomean(median on/off)  mean per-seed log ratio  worst  best')
for k, v in sorted(agg.items()):
    same = sum(1 for ga, gb, _ in v if ga == gb)
    up = sum(1 for ga, gb, _ in v if ga > 0 and gb > ga * 1.01)
    dn = sum(1 for ga, gb, _ in v if ga > 0 and gb < ga * 0.99)
    rs = [gb/ga for ga, gb, _ in v if ga > 0 and gb > 0]
    gm = math.exp(statistics.mean(math.log(r) for r in rs)) if rs else float('nan')
    ps = math.exp(statistics.mean(x for _, _, x in v))
    print(f'{k:24} {len(v):3} {same:4} {up:4} {dn:4}   {gm:.4f}   {ps:.4f}   {min(rs or [0]):.3f} {max(rs or [0]):.3f}')
