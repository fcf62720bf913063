#!/usr/bin/python3
"""check_fidelity.py ORIG.jsonl REPLAY.jsonl - the replay's trace (from
`allocrr record -- allocrr-replay-engine --threads serial ...`) must hold the
original's calls, in order, as one contiguous run, with the same functions,
sizes, counts, alignments and outcomes, and pointer arguments naming the
same objects (original address <-> replayed address). Exit 1 and say where
it differs otherwise."""
import json
import sys

CALLS = {"malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc",
         "memalign", "valloc", "pvalloc", "reallocarray"}


def calls(path):
    out = []
    with open(path) as f:
        for line in f:
            ev = json.loads(line)
            if ev["op"] not in CALLS:
                continue
            ret = int(ev.get("ret", "0x0"), 16)
            if ev["op"] == "posix_memalign":
                failed = ev.get("err", 0) != 0
            else:
                failed = ev["op"] != "free" and ret == 0
            out.append({"op": ev["op"], "size": ev.get("size"), "nmemb": ev.get("nmemb"),
                        "align": ev.get("align"), "ptr": int(ev.get("ptr", "0x0"), 16),
                        "ret": ret, "failed": failed, "tid": ev["tid"]})
    return out


def key(c):
    return (c["op"], c["size"], c["nmemb"], c["align"], c["failed"])


def main():
    orig, rep = calls(sys.argv[1]), calls(sys.argv[2])
    if not orig:
        print("original trace has no calls")
        return 1
    keys = [key(c) for c in orig]
    starts = [s for s in range(len(rep) - len(orig) + 1)
              if [key(c) for c in rep[s:s + len(orig)]] == keys]
    if not starts:
        # say how far the best alignment got
        best, where = 0, 0
        for s in range(len(rep)):
            n = 0
            while n < len(orig) and s + n < len(rep) and key(rep[s + n]) == keys[n]:
                n += 1
            if n > best:
                best, where = n, s
        print(f"original calls not found in order: longest match {best}/{len(orig)} at replay call {where}")
        if best < len(orig):
            print(f"  expected {keys[best]}")
            if where + best < len(rep):
                print(f"  got      {key(rep[where + best])}")
        return 1
    s = starts[0]
    addr = {0: 0}
    for i, (o, r) in enumerate(zip(orig, rep[s:s + len(orig)])):
        if o["op"] in ("free", "realloc", "reallocarray") and o["ptr"] in addr:
            if addr[o["ptr"]] != r["ptr"]:
                print(f"call {i} ({o['op']}): pointer argument names another object "
                      f"(0x{r['ptr']:x}, expected 0x{addr[o['ptr']]:x})")
                return 1
        if o["op"] != "free" and not o["failed"]:
            addr[o["ret"]] = r["ret"]
    tids = {r["tid"] for r in rep[s:s + len(orig)]}
    print(f"ok: {len(orig)} calls replayed in order at replay call {s} "
          f"of {len(rep)}, {len(tids)} thread(s)")
    return 0


sys.exit(main())
