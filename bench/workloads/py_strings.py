#!/usr/bin/env python3
"""Allocation-heavy Python workload: build and sort ~N strings.

Usage: py_strings.py [N]          (default 500000)

Run it with PYTHONMALLOC=malloc so every object goes through libc malloc/free
and the recorder sees it. The output (a count and a checksum) is the same on
every run and does not depend on PYTHONHASHSEED.
"""
import sys

from wlargs import scale
import zlib

WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
         "hotel", "india", "juliett", "kilo", "lima", "mike", "november",
         "oscar", "papa", "quebec", "romeo", "sierra", "tango")


def main(argv):
    n, code = scale(argv, __doc__, 500000)
    if code is not None:
        return code

    # A small linear congruential generator keeps the output independent of
    # the interpreter's random module and hash seed.
    state = 12345

    strings = []
    by_key = {}
    for i in range(n):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        w1 = WORDS[state % 20]
        w2 = WORDS[(state >> 8) % 20]
        reps = 1 + (state >> 16) % 6
        # Formatting, repetition and concatenation of varying length.
        s = "%s-%d:%s" % (w1, state % 100000, w2 * reps)
        if i % 3 == 0:
            s = s.upper() + "/" + str(i)
        elif i % 3 == 1:
            s = "".join([w2, ".", s[::-1]])
        strings.append(s)
        key = s[:12]
        bucket = by_key.get(key)
        if bucket is None:
            by_key[key] = [s]
        else:
            bucket.append(s)

    strings.sort()
    keys = sorted(by_key)
    # Drop half the list in place so the frees interleave with live data.
    del strings[::2]
    pairs = sorted((len(s), s) for s in strings)

    crc = 0
    for s in strings:
        crc = zlib.crc32(s.encode(), crc)
    for k in keys:
        crc = zlib.crc32(k.encode(), crc)
    crc = zlib.crc32(pairs[len(pairs) // 2][1].encode(), crc)
    print("strings=%d kept=%d keys=%d crc=%08x" % (n, len(strings), len(keys), crc))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
