# seedcmp.py: seeds 1-20 of each contested cell, off vs first, same binary
import json, glob, os, statistics as st
def gp(path):
    d = json.load(open(path))
    return {r['seed']: r['flows'][0]['goodput_bps'] / 1e6 for r in d['runs']}
for f in sorted(glob.glob('seeds/out/*-off/results.json')):
    cell = os.path.basename(os.path.dirname(f))[:-4]
    off = gp(f); first = gp(f'seeds/out/{cell}-first/results.json')
    seeds = sorted(off)
    up = sum(first[s] > off[s] + 1e-9 for s in seeds); down = sum(first[s] < off[s] - 1e-9 for s in seeds)
    m = lambda d, ss: st.median([d[s] for s in ss])
    print(f'{cell:42} med 1-20 {m(off,seeds):6.2f} -> {m(first,seeds):6.2f} Mb/s | mean {st.mean(off.values()):6.2f} -> {st.mean(first.values()):6.2f} | up {up} down {down} same {len(seeds)-up-down} | med 4-20 {m(off,seeds[3:]):6.2f} -> {m(first,seeds[3:]):6.2f}')
