"""py_churn.py N: medium strings made and dropped, N rounds.

Each round makes a string of 600 B to 20 KB and its upper-case copy, and
drops both at the next round: with pymalloc on (as users run python), the
two are malloc'd blocks of random sizes above pymalloc's 512 bytes, a couple
alive at a time -- the churn of medium blocks that a segregated allocator
serves from its class pages and a coalescing one from its free spans
(bench/bench-allocators.sh's `pychurn` workload). Prints the total length.
"""
import random
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 300000
r = random.Random(1)
total = 0
for _ in range(n):
    s = "x" * r.randint(600, 20000)
    t = s.upper()
    total += len(t)
print(total)
