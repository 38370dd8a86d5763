# lp10.py: long-paths cubic target files, seeds 1-10, off vs first (same binary).
# Fractions: goodput / (capacity * (1 - p)); flow 0 = first connection, flow 1 = second.
import json, glob, os, re, statistics as st
for f in sorted(glob.glob('lp10/out/*-off/results.json')):
    cell = os.path.basename(os.path.dirname(f))[:-4]
    try: g = json.load(open(f'lp10/out/{cell}-first/results.json'))
    except FileNotFoundError: continue
    d = json.load(open(f))
    m = re.search(r'-(0\.\d+)-rtt-600-(\d+)mbit', cell); p = float(m.group(1)); cap = float(m.group(2))
    if 'corrupt' in cell: p = p  # corruption also takes p of packets
    fr = lambda run, i: run['flows'][i]['goodput_bps'] / 1e6 / (cap * (1 - p))
    for i, who in ((0, 'first'), (1, 'second')):
        a = {r['seed']: fr(r, i) for r in d['runs']}; b = {r['seed']: fr(r, i) for r in g['runs']}
        better = sum(b[s] > a[s] + 1e-12 for s in a)
        print(f'{cell[8:]:52} {who:6} {st.median(a.values()):.3f} -> {st.median(b.values()):.3f} ({better}/{len(a)} better)')
