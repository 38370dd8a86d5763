import sys, re
exp = sys.argv[1]; thr = float(sys.argv[2]) if len(sys.argv) > 2 else 0.02
def tables(path):
    out = []; sec = ''; hdr = None
    for line in open(path):
        line = line.rstrip('\n')
        if line.startswith('#'): sec = line.strip('# '); hdr = None; continue
        if not line.startswith('|'): hdr = None; continue
        cells = [c.strip() for c in line.strip('|').split('|')]
        if hdr is None: hdr = cells; continue
        if set(line) <= set('|-: '): continue
        out.append((sec, hdr, cells))
    return out
a = tables(f'/tmp/ssp/off/{exp}/summary.md'); b = tables(f'/tmp/ssp/on/{exp}/summary.md')
for (sa, ha, ca), (sb, hb, cb) in zip(a, b):
    for i, (x, y) in enumerate(zip(ca, cb)):
        try: fx, fy = float(x), float(y)
        except: continue
        if abs(fy - fx) >= thr:
            print(f'{sa[:40]:40} | {" ".join(ca[:i if i<3 else 2])[:40]:40} | {ha[i]:22} | {x} -> {y}')
