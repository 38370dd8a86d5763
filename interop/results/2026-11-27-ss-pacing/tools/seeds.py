import json, statistics, os
cells = ['targets-loss-0.01-rtt-600-50mbit-cubic', 'targets-loss-0.02-rtt-600-20mbit-cubic', 'targets-corrupt-notices-on-0.01-rtt-600-50mbit-cubic']
cap = {'targets-loss-0.01-rtt-600-50mbit-cubic': 50e6*0.99, 'targets-loss-0.02-rtt-600-20mbit-cubic': 20e6*0.98, 'targets-corrupt-notices-on-0.01-rtt-600-50mbit-cubic': 50e6*0.99}
for c in cells:
    for v in ['fresh', 'careful-resume']:
        res = {}
        for s in ['off', 'on']:
            runs = json.load(open(f'/tmp/ssp/{s}/long-paths/{c}-{v}/results.json'))['runs']
            p = f'/tmp/ssp/seeds/out/{c}-{v}-{s}/results.json'
            if os.path.exists(p): runs += json.load(open(p))['runs']
            res[s] = runs
        for fi, lab in [(0, 'first'), (1, v)]:
            if v == 'careful-resume' and fi == 0: continue
            out = []
            for s in ['off', 'on']:
                g = [(r['flows'][fi]['goodput_bps'] or 0)/cap[c] for r in res[s]]
                out.append(g)
            n = min(len(out[0]), len(out[1]))
            wins = sum(1 for a, b in zip(out[0], out[1]) if b > a)
            print(f'{c} {lab:15} n={n} off med {statistics.median(out[0][:n]):.3f} mean {statistics.mean(out[0][:n]):.3f} | on med {statistics.median(out[1][:n]):.3f} mean {statistics.mean(out[1][:n]):.3f} | on better in {wins}/{n}')
