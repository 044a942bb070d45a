# stats.py FILE: per-variant mean/median MB/s, p50 and node CPU of a rounds.sh output,
# and each variant against the first one of the same round.
import statistics as st, sys
rows=[l.split() for l in open(sys.argv[1])]
d={}
order=[]
for r in rows:
    k=r[0]+' '+r[1]
    if k not in d: order.append(k)
    d.setdefault(k,[]).append((float(r[2]),float(r[5]),float(r[7])))
base=order[0]
for k in order:
    v=d[k]; mb=[x[0] for x in v]; cpu=[x[2] for x in v]; p50=[x[1] for x in v]
    rat=[v[i][0]/d[base][i][0]-1 for i in range(len(v))]
    print('%-10s MB/s %s | mean %.1f median %.1f | p50 median %.1f | cpu mean %.2f | vs %s per round: mean %+.1f%% median %+.1f%%'%(k,' / '.join('%.1f'%x for x in mb),st.mean(mb),st.median(mb),st.median(p50),st.mean(cpu),base,100*st.mean(rat),100*st.median(rat)))
