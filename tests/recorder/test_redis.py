#!/usr/bin/env python3
"""A real server on jemalloc: Debian's redis-server (linked against
libjemalloc) recorded under a bounded redis-benchmark run on 127.0.0.1. The
trace lasts as long as the server ran (within 20%) and replays with no free
of an unknown block and no block returned twice. Skips without redis."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test():
    server, bench, cli = (shutil.which(n) for n in ("redis-server", "redis-benchmark", "redis-cli"))
    if not (server and bench and cli):
        print("SKIP: redis-server/redis-tools not installed (apt-get install redis-server redis-tools)")
        sys.exit(77)
    d = t.tmpdir()
    out = os.path.join(d, "redis.atr")
    port = str(free_port())
    t0 = time.monotonic()
    rec = subprocess.Popen([t.ALLOCRR, "record", "-q", "-o", out, "--", server, "--port", port,
                            "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                            "--daemonize", "no", "--logfile", os.path.join(d, "redis.log"),
                            "--dir", d], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if subprocess.run([cli, "-p", port, "ping"], capture_output=True).stdout.strip() == b"PONG":
                break
            time.sleep(0.05)
        else:
            raise AssertionError("redis-server did not answer on port %s" % port)
        t.run([bench, "-p", port, "-n", "20000", "-q", "-t", "set,get,lpush,lpop,incr,hset"],
              timeout=60)
        t.run([cli, "-p", port, "shutdown", "nosave"], check=False)
        rc = rec.wait(timeout=30)
    finally:
        if rec.poll() is None:
            rec.kill()
    wall = time.monotonic() - t0
    t.expect(rc == 0, "record exited %d" % rc)
    inf = t.info(out)
    t.expect(inf["clean"] and inf["ending"] == "exit", "not clean: %s" % inf)
    t.expect(inf["events"] > 100000, "only %d events recorded" % inf["events"])
    dur = inf["duration_ns"] / 1e9
    t.expect(0.8 * wall - 0.3 <= dur <= 1.2 * wall, "trace lasts %.3f s, the server ran %.3f s" % (dur, wall))
    rep = t.run([t.ALLOCRR, "replay", "-q", "-a", "glibc", "--json", out])
    repairs = json.loads(rep.stdout)["workload"]["repairs"]
    bad = {k: v for k, v in repairs.items() if k != "ignored_event" and v}
    t.expect(not bad, "replay repairs %s" % repairs)
    print("redis: %d events in %.2f s (ran %.2f s), replay repairs none" % (inf["events"], dur, wall))


t.main(test)
