#!/usr/bin/env python3
"""Compare before/after sift-lab results: per scenario, per flow, the median
over seeds of goodput/(capacity*(1-p)) (one-flow and long-paths cells) or
the flow's share of the bytes (several flows at once, 'sharing' cells).
usage: cmp.py BEFORE_DIR AFTER_DIR [FILTER...]"""
import json, os, statistics, sys

def metric(path):
    d = json.load(open(path))
    out = {}
    for run in d["runs"]:
        params = run["params"]
        rate = params["bottleneck"]["forward"]["rate_bps"]
        p = params.get("p", 0.0) or 0.0
        flows = run["flows"]
        total = sum(f["bytes_received"] for f in flows)
        shared = params.get("part") == "sharing"
        for f in flows:
            key = (f["id"], f["cc"])
            if shared:
                v = f["bytes_received"] / total if total else 0.0
            else:
                g = f["goodput_bps"]
                if g is None:  # not finished: bytes over the run so far
                    g = f["bytes_received"] * 8 / max(run["end_s"] - f["start_s"], 1e-9)
                v = g / (rate * (1 - p))
            out.setdefault(key, {})[run["seed"]] = v
    return out

before, after = sys.argv[1], sys.argv[2]
filters = sys.argv[3:]
for name in sorted(os.listdir(after)):
    if filters and not any(f in name for f in filters):
        continue
    b = os.path.join(before, name, "results.json")
    a = os.path.join(after, name, "results.json")
    if not (os.path.exists(a) and os.path.exists(b)):
        continue
    mb, ma = metric(b), metric(a)
    for key in sorted(ma):
        vb, va = mb.get(key, {}), ma[key]
        seeds = sorted(set(vb) & set(va))
        if not seeds:
            continue
        medb = statistics.median(vb[s] for s in seeds)
        meda = statistics.median(va[s] for s in seeds)
        better = sum(va[s] > vb[s] + 1e-9 for s in seeds)
        same = sum(abs(va[s] - vb[s]) <= 1e-9 for s in seeds)
        flag = " *" if abs(meda - medb) >= 0.02 else ""
        print(f"{name} flow{key[0]}-{key[1]}: {medb:.3f} -> {meda:.3f} "
              f"(better {better}/{len(seeds)}, same {same}){flag}")
