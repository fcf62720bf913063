#!/usr/bin/env python3
"""Print an SQL script for an allocation-heavy sqlite3 workload.

Usage: sqlite_gen.py [N] > x.sql    (default N = 200000)
       sqlite3 :memory: < x.sql     (or: sqlite3 x.db < x.sql)

The script creates a table with two secondary indexes, inserts ~N rows in a
few transactions, updates and deletes some of them, and runs queries whose
output is the same on every run.
"""
import sys

from wlargs import scale

WORDS = ("amber", "basil", "cedar", "dune", "ember", "fjord", "garnet",
         "harbor", "iris", "jade", "kelp", "lotus", "maple", "nectar",
         "onyx", "pearl", "quartz", "river", "saffron", "thistle")

TRANSACTIONS = 4


def main(argv):
    n, code = scale(argv, __doc__, 200000)
    if code is not None:
        return code

    out = []
    w = out.append
    w(".bail on")
    w("PRAGMA journal_mode=MEMORY;")
    w("PRAGMA synchronous=OFF;")
    w("CREATE TABLE IF NOT EXISTS item(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
      " category INTEGER NOT NULL, price REAL NOT NULL, note TEXT);")
    w("DELETE FROM item;")
    w("CREATE INDEX IF NOT EXISTS item_name ON item(name);")
    w("CREATE INDEX IF NOT EXISTS item_cat_price ON item(category, price);")

    state = 424242
    per_tx = (n + TRANSACTIONS - 1) // TRANSACTIONS
    for i in range(n):
        if i % per_tx == 0:
            if i:
                w("COMMIT;")
            w("BEGIN;")
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        a = WORDS[state % 20]
        b = WORDS[(state >> 7) % 20]
        name = "%s_%s_%d" % (a, b, (state >> 3) % 1000003)
        cat = (state >> 11) % 97
        price = ((state >> 5) % 100000) / 100.0
        note = (a + " ") * (1 + (state >> 17) % 8)
        w("INSERT INTO item(id, name, category, price, note) VALUES"
          "(%d, '%s', %d, %.2f, '%s');" % (i + 1, name, cat, price, note))
    w("COMMIT;")

    w("BEGIN;")
    w("UPDATE item SET price = price * 1.1 WHERE category % 7 = 3;")
    w("DELETE FROM item WHERE id % 10 = 0;")
    w("COMMIT;")

    w("SELECT count(*), count(DISTINCT category) FROM item;")
    w("SELECT category, count(*), printf('%.2f', sum(price)) FROM item"
      " GROUP BY category ORDER BY category LIMIT 5;")
    w("SELECT name, printf('%.2f', price) FROM item WHERE name >= 'lotus'"
      " ORDER BY name LIMIT 5;")
    w("SELECT count(*) FROM item WHERE category = 42 AND price BETWEEN 100 AND 500;")
    w("SELECT substr(note, 1, 20), count(*) FROM item GROUP BY note"
      " ORDER BY count(*) DESC, note LIMIT 3;")
    w("SELECT a.category, count(*) FROM item a JOIN item b ON a.name = b.name"
      " AND a.id <> b.id GROUP BY a.category ORDER BY a.category LIMIT 3;")
    w("SELECT printf('%.2f', avg(length(name))), max(id) FROM item;")

    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
