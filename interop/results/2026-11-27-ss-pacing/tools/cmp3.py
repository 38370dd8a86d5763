# cmp3.py OFF.md FIRST.md [ON.md] [THRESHOLD]: summary cells where first or on
# moved from off by >= THRESHOLD (default 0.02); prints off -> first (-> on).
import sys
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
args = sys.argv[1:]
thr = 0.02
if args and not args[-1].endswith('.md'): thr = float(args.pop())
a = tables(args[0]); b = tables(args[1]); c = tables(args[2]) if len(args) > 2 else None
assert len(a) == len(b), (len(a), len(b))
for k, ((sa, ha, ca), (sb, hb, cb)) in enumerate(zip(a, b)):
    cc = c[k][2] if c else None
    for i, (x, y) in enumerate(zip(ca, cb)):
        try: fx, fy = float(x), float(y)
        except: continue
        z = cc[i] if cc else ''
        try: fz = float(z)
        except: fz = fx
        if abs(fy - fx) >= thr:
            print(f'{sa[:38]:38} | {" ".join(ca[:min(i,4)])[:40]:40} | {ha[i][:22]:22} | {x} -> {y}' + (f' (on {z})' if cc else ''))
