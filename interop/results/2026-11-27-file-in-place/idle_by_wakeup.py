#!/usr/bin/env python3
"""Idle CPU time during a download, by the thread whose wake-up ended it.

    perf record -e sched:sched_switch -e sched:sched_wakeup -a -o sched.perf -- CLIENT ...
    perf script -i sched.perf -F comm,tid,cpu,time,event,trace | idle_by_wakeup.py

An idle period runs from a switch to the idle task on a CPU to the next
switch away from it; it is charged to the task switched to, and to the
context its wake-up was recorded in ("swapper": a wake-up queued to an idle
CPU and completed there).
"""
import collections
import re
import sys

idle_start, idle_by, idle_n, last_wake = {}, collections.Counter(), collections.Counter(), {}
total, first, last = 0.0, None, None
for line in sys.stdin:
    m = re.match(r"\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)", line)
    if not m:
        continue
    comm, _tid, cpu, t, event, trace = m.groups()
    t, cpu = float(t), int(cpu)
    first = t if first is None else first
    last = t
    if event == "sched_wakeup":
        woken = re.search(r"comm=(.+?) pid=(\d+)", trace)
        last_wake[woken.group(2)] = comm.split("/")[0]
        continue
    switch = re.search(r"prev_comm=(.+?) prev_pid=(\d+).*==> next_comm=(.+?) next_pid=(\d+)", trace)
    _prev_comm, prev_pid, next_comm, next_pid = switch.groups()
    if next_pid == "0":
        idle_start[cpu] = t
    elif prev_pid == "0" and cpu in idle_start:
        span = t - idle_start.pop(cpu)
        key = (next_comm, last_wake.get(next_pid, "?"))
        idle_by[key] += span
        idle_n[key] += 1
        total += span
span = last - first
print(f"span {span:.3f} s, idle {total:.3f} CPU-s ({100 * total / (2 * span):.0f}% of 2 CPUs)")
for (woken, waker), idle in idle_by.most_common(12):
    n = idle_n[(woken, waker)]
    print(f"{idle:.4f} s  n={n}  mean {1e6 * idle / n:.0f} us  ended by waking {woken} (from {waker})")
