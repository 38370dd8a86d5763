#!/usr/bin/env python3
"""Medians (and ranges) per row of many-run.txt, as a markdown table."""
import statistics, sys
rows = {}
order = []
for line in open(sys.argv[1] if len(sys.argv) > 1 else "many-run.txt"):
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    if "server" not in f:
        continue
    which = f["bin"] if f["server"].startswith("sift") else "-"
    if "extra" in f:
        which += " " + f["extra"].replace(",", " ")
    key = (f["server"], which)
    if key not in rows:
        order.append(key)
    rows.setdefault(key, []).append(f)
def num(v):
    return float(v.rstrip("sMB"))
def med(runs, k, fmt="{:.2f}"):
    vals = [num(r[k]) for r in runs if k in r]
    if not vals:
        return "–"
    m = statistics.median(vals)
    return f"{fmt.format(m)} ({fmt.format(min(vals))}–{fmt.format(max(vals))})"
def rng(runs, k):
    vals = [int(num(r[k])) for r in runs if k in r]
    return f"{min(vals)}–{max(vals)}" if vals else "–"
print("| server | bin | runs | byte-exact | CPU ms/client | wall s | peak RSS MB | server socket drops | host rcvbuf errors | senders retransmitting | senders asking checksum-free | load1 |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for key in order:
    runs = rows[key]
    print(f"| {key[0]} | {key[1]} | {len(runs)} | {rng(runs, 'byte_exact')} | {med(runs, 'server_cpu_ms_per_client')} | {med(runs, 'wall')} | {med(runs, 'server_vmhwm', '{:.0f}')} | {rng(runs, 'server_udp_drops')} | {rng(runs, 'host_rcvbuf_errors')} | {rng(runs, 'senders_retransmitting')} | {rng(runs, 'senders_asking_checksum_free') if key[1] != 'before' else 'n/a'} | {min(float(r['load1']) for r in runs)}–{max(float(r['load1']) for r in runs)} |")
