"""Recovery periods in a sift client qlog (.sqlog): how many, how long, and
how soon the first packet leaves after entering one.

    python3 recovery_spells.py DIR/qlog/seed-2-flow-0-client.sqlog
"""
import json
import statistics
import sys

enter = None
first_send_pending = None
durations, first_send = [], []
with open(sys.argv[1]) as f:
    for line in f:
        if '"quic:congestion_state_updated"' not in line and '"quic:packet_sent"' not in line:
            continue
        event = json.loads(line.strip('\x1e \n'))
        t = event['time'] / 1000
        data = event['data']
        if event['name'] == 'quic:packet_sent':
            if first_send_pending is not None:
                first_send.append(t - first_send_pending)
                first_send_pending = None
            continue
        if data.get('new') == 'recovery':
            enter = first_send_pending = t
        elif data.get('old') == 'recovery' and enter is not None:
            durations.append(t - enter)
print(f'recovery periods {len(durations)}, mean {statistics.mean(durations):.3f} s, '
      f'median {statistics.median(durations):.3f} s')
print(f'first packet after entering recovery: mean {statistics.mean(first_send):.3f} s, '
      f'median {statistics.median(first_send):.3f} s, max {max(first_send):.3f} s')
