"""Config errors: one line naming file:line:column, a suggestion for a
misspelt key, exit 2; a missing config file or trace also exits 2."""
import os
import sys

from report_common import expect, report, tmpdir, write

import arrtest

main = arrtest.main


def case(d, name, text, want_where, want_msg):
    cfg = write(os.path.join(d, name), text)
    p = report(cfg, "-q", check=2)
    err = p.stderr.strip()
    expect(len(err.splitlines()) == 1, "%s: want one line of error, got:\n%s" % (name, err))
    where = "%s:%s: " % (cfg, want_where)
    expect(where in err, "%s: error does not name %s:\n%s" % (name, where, err))
    expect(want_msg in err, "%s: error lacks %r:\n%s" % (name, want_msg, err))


def test():
    d = tmpdir()
    trace = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "traces", "calls.atr"))
    case(d, "typo.yaml", "traces: [%s]\nalocators: [glibc]\n" % trace, "2:1",
         "unknown key 'alocators'; did you mean 'allocators'?")
    case(d, "nested.yaml", "traces: [%s]\nreplay:\n  runs: 2\n  sampels: 10\n" % trace, "4:3",
         "did you mean 'samples'?")
    case(d, "type.yaml", "traces: [%s]\nreplay: {runs: lots}\n" % trace, "2:16",
         "'runs' wants a whole number from 1 to 1000")
    case(d, "bool.yaml", "traces: [%s]\nreplay: {zeroing: perhaps}\n" % trace, "2:19",
         "'zeroing' wants true or false")
    case(d, "list.yaml", "traces: [%s]\nallocators: {glibc: 1}\n" % trace, "2:13",
         "'allocators' wants a list")
    case(d, "check.yaml", "traces: [%s]\nchecks:\n  - peak_rss <= 1.1 *\n" % trace, "3:22",
         "expected a number or a metric")
    case(d, "yaml.yaml", "traces: [%s\nchecks: [a]\n" % trace, "2:7", "did not find expected")
    case(d, "notrace.yaml", "traces: [%s/nope.atr]\n" % d, "1:10", "no such trace")
    case(d, "noglob.yaml", "traces:\n  - %s/*.nope\n" % d, "2:5", "no trace matches")
    # allocators the config misspells: its error, where it was written, before any work
    case(d, "alloc.yaml", "traces: [%s]\nallocators: [glibc, glibcc]\n" % trace, "2:21",
         "unknown allocator 'glibcc'")
    case(d, "tunable.yaml", "traces: [%s]\nallocators:\n  - {name: glibc, tunables: {mmap_thresold: 5}}\n" % trace,
         "3:12", "unknown tunable 'mmap_thresold'")
    case(d, "tvalue.yaml", "traces: [%s]\nallocators:\n  - name: glibc\n    tunables: {mmap_threshold: [1, zz]}\n"
         % trace, "3:11", "bad value 'zz'")
    # a missing config file
    p = report(os.path.join(d, "absent.yaml"), check=2)
    expect("absent.yaml" in p.stderr and "No such file" in p.stderr, "missing config:\n" + p.stderr)
    # help and bad usage
    p = report("--help", check=0)
    expect("usage: allocrr report" in p.stdout, "--help prints the usage")
    p = arrtest.run([arrtest.ALLOCRR, "report"], check=False)
    expect(p.returncode == 2, "no config: exit %d" % p.returncode)


if __name__ == "__main__":
    main(test)
