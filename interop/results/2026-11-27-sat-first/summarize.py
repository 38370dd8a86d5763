import sys,statistics,collections
# args: label=file ...
for arg in sys.argv[1:]:
    label,files=arg.split('=',1)
    rows=collections.defaultdict(list)
    for f in files.split(','):
        for line in open(f):
            p=line.split()
            if len(p)>=5 and p[0] in('sift','quiche') and p[4]=='True':
                rows[(p[0],p[1],p[2])].append(float(p[3]))
    for k in sorted(rows):
        v=rows[k]; print(f"{label:6s} {k[0]} {k[1]} conn{k[2]}: median {statistics.median(v):.2f} of {len(v)}: {' '.join(f'{x:.2f}' for x in v)}")
