#!/bin/sh
# libarr-lifo.so, the time floor of bench-alloc-matrix.sh FLOOR=1: a replay
# of every block freed by another thread, serial and parallel, executes every
# call with no anomaly; and real programs preloaded with it compute what they
# compute under glibc (sort, python3 with four threads): blocks never overlap,
# usable sizes hold, realloc keeps contents, calloc is zero.
# Arguments: those of lib.sh, then the library.
. "$(dirname "$0")/lib.sh"
LIFO=$5
[ -f "$LIFO" ] || fail "no $LIFO"
"$ALLOCRR" record -q -o cross.atr -- "$BINDIR/replay-test-crossfree" || fail "recording"
for t in serial parallel; do
	"$ALLOCRR" replay -q -a "$LIFO" --threads $t --touch all --json cross.atr >$t.json || fail "replay $t"
	$PY - $t.json <<'PY' || fail "$t replay into the floor"
import json, sys
d = json.load(open(sys.argv[1])); w = d["workload"]; r = d["results"][0]
assert r["ops"] == w["calls"] >= 50000, (r["ops"], w["calls"])
assert r["anomalies"] == 0, r["anomalies"]
PY
done
# blocks of every size up to the floor's 4 MiB classes (a 1 MiB block once
# overran its 1 MiB chunk)
cat >big.py <<'PY'
import hashlib
h = hashlib.sha256()
keep = []
for i in range(400):
    b = bytearray((i * 7919) % (4 << 20) + 1)
    b[-1] = i % 256
    keep.append(b)
    if len(keep) > 8:
        h.update(bytes(keep.pop(0)[-64:]))
print(h.hexdigest())
PY
$PY big.py >ref.big.txt || fail "python3 big blocks"
LD_PRELOAD=$LIFO $PY big.py >lifo.big.txt || fail "python3 big blocks under the floor"
cmp -s ref.big.txt lifo.big.txt || fail "big blocks: output differs under the floor"
$PY -c "
import random
r = random.Random(5)
for i in range(200000):
    print(''.join(r.choice('abcdefgh') for _ in range(r.randint(1, 40))), r.randint(0, 10**6))
" >words.txt
sort -k2,2n -k1,1 words.txt >ref.txt
LD_PRELOAD=$LIFO sort -k2,2n -k1,1 words.txt >lifo.txt || fail "sort under the floor"
cmp -s ref.txt lifo.txt || fail "sort's output differs under the floor"
cat >thr.py <<'PY'
import hashlib, json, threading
out = [None] * 4
def work(k):
    h = hashlib.sha256()
    keep = []
    for i in range(20000):
        s = json.dumps({"k": k, "i": i, "s": "x" * (i % 700), "l": list(range(i % 60))})
        keep.append(s)
        if len(keep) > 500:
            h.update("".join(keep[:250]).encode())
            del keep[:250]
    out[k] = h.hexdigest()
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
print(out)
PY
$PY thr.py >ref.py.txt || fail "python3"
LD_PRELOAD=$LIFO $PY thr.py >lifo.py.txt || fail "python3 under the floor"
cmp -s ref.py.txt lifo.py.txt || fail "python3's output differs under the floor"
echo ok
