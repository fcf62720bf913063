#!/usr/bin/env python3
"""Print a large, valid, self-contained C file for a compiler workload.

Usage: gen_c.py [LINES] > big.c    (default LINES = 100000)
       gcc -O1 -c big.c -o big.o

The file has many structs and functions with loops, switch statements and
string literals; it compiles without warnings under -Wall -Wextra. The same
LINES always gives the same file.
"""
import sys

from wlargs import scale

# Each generated "module" holds one struct, a name table, a data table of
# TABLE_ROWS initialisers and FUNCS_PER_MODULE functions. Functions cost cc1
# far more time per line than tables; this mix puts cc1 -O1 at ~45 us and
# ~40 malloc calls per line, like the C file the peers were measured on.
FUNCS_PER_MODULE = 2
TABLE_ROWS = 400


class Rng:
    def __init__(self, seed):
        self.state = seed

    def next(self, n):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) \
            & 0xFFFFFFFFFFFFFFFF
        return (self.state >> 33) % n


def gen_struct(w, m, rng):
    nfields = 4 + rng.next(5)
    w("struct rec%d {" % m)
    w("    int id;")
    w("    unsigned flags;")
    for f in range(nfields):
        kind = rng.next(4)
        if kind == 0:
            w("    long f%d;" % f)
        elif kind == 1:
            w("    double f%d;" % f)
        elif kind == 2:
            w("    char f%d[%d];" % (f, 8 + 8 * rng.next(4)))
        else:
            w("    unsigned short f%d;" % f)
    w("    struct rec%d *next;" % m)
    w("};")
    w("")
    return nfields


def gen_func(w, m, k, rng):
    name = "m%d_f%d" % (m, k)
    w("static long %s(struct rec%d *r, const char *s, int n)" % (name, m))
    w("{")
    w("    long acc = %d;" % rng.next(1000))
    w("    int i;")
    w("    char buf[64];")
    w("    for (i = 0; i < n; i++) {")
    w("        acc += (long)s[i %% 16] * %d + r->id;" % (1 + rng.next(97)))
    w("        switch ((i + (int)acc) & 7) {")
    for c in range(8):
        op = rng.next(5)
        if op == 0:
            w("        case %d: acc ^= (acc << %d) + %d; break;" % (c, 1 + rng.next(7), rng.next(5000)))
        elif op == 1:
            w("        case %d: acc -= i * %d; r->flags |= %du; break;" % (c, rng.next(50), 1 << rng.next(16)))
        elif op == 2:
            w("        case %d: {" % c)
            w("            int j;")
            w("            for (j = 0; j < %d; j++)" % (2 + rng.next(6)))
            w("                acc += j * (long)r->flags;")
            w("            break;")
            w("        }")
        elif op == 3:
            w("        case %d: if (acc > %d) acc /= 3; else acc *= 2; break;" % (c, rng.next(100000)))
        else:
            w("        case %d: acc += (long)strlen(\"%s\"); break;" % (c, word(rng)))
    w("        default: break;")
    w("        }")
    w("    }")
    w("    snprintf(buf, sizeof buf, \"%%s-%%ld-%s\", s, acc);" % word(rng))
    w("    acc += (long)strlen(buf);")
    w("    while (r->next != NULL && acc > 0) {")
    w("        r = r->next;")
    w("        acc -= r->id + %d;" % (1 + rng.next(100)))
    w("    }")
    w("    return acc;")
    w("}")
    w("")
    return name


WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
         "hotel", "india", "juliett", "kilo", "lima", "mike", "november")


def word(rng):
    return "_".join(WORDS[rng.next(len(WORDS))] for _ in range(1 + rng.next(4)))


def gen_module(w, m, rng):
    gen_struct(w, m, rng)
    w("static const char *const m%d_names[] = {" % m)
    for _ in range(4 + rng.next(5)):
        w("    \"%s\"," % word(rng))
    w("};")
    w("")
    w("static const struct m%d_entry {" % m)
    w("    int key;")
    w("    const char *label;")
    w("    double weight;")
    w("    unsigned mask;")
    w("} m%d_table[] = {" % m)
    for _ in range(TABLE_ROWS):
        w("    { %d, \"%s\", %d.%d, 0x%xu }," % (rng.next(100000), word(rng), rng.next(1000),
                                             rng.next(100), rng.next(1 << 24)))
    w("};")
    w("")
    funcs = [gen_func(w, m, k, rng) for k in range(FUNCS_PER_MODULE)]
    w("long m%d_run(int n);" % m)
    w("long m%d_run(int n)" % m)
    w("{")
    w("    struct rec%d a, b;" % m)
    w("    long total = 0;")
    w("    size_t i;")
    w("    memset(&a, 0, sizeof a);")
    w("    memset(&b, 0, sizeof b);")
    w("    a.id = %d;" % rng.next(1000))
    w("    b.id = %d;" % rng.next(1000))
    w("    a.next = &b;")
    w("    for (i = 0; i < sizeof m%d_names / sizeof m%d_names[0]; i++) {" % (m, m))
    w("        const char *s = m%d_names[i];" % m)
    w("        switch (i %% %d) {" % len(funcs))
    for k, f in enumerate(funcs):
        w("        case %d: total += %s(&a, s, n); break;" % (k, f))
    w("        default: break;")
    w("        }")
    w("    }")
    w("    for (i = 0; i < sizeof m%d_table / sizeof m%d_table[0]; i++)" % (m, m))
    w("        if (m%d_table[i].mask & (1u << (n & 15)))" % m)
    w("            total += m%d_table[i].key + (long)strlen(m%d_table[i].label);" % (m, m))
    w("    return total;")
    w("}")
    w("")


def main(argv):
    lines, code = scale(argv, __doc__, 100000)
    if code is not None:
        return code

    rng = Rng(2024)
    out = []
    w = out.append
    w("/* Generated by gen_c.py %d: a compiler workload. Do not edit. */" % lines)
    w("#include <stdio.h>")
    w("#include <string.h>")
    w("")
    modules = 0
    while modules == 0 or len(out) + modules + 6 < lines:
        gen_module(w, modules, rng)
        modules += 1
    w("long run_all(int n);")
    w("long run_all(int n)")
    w("{")
    w("    long t = 0;")
    for m in range(modules):
        w("    t += m%d_run(n);" % m)
    w("    return t;")
    w("}")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
