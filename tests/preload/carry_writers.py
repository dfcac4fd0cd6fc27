#!/usr/bin/env python3
"""carry_writers.py DB SECONDS - carried checkpoints while writers come and go.

One long-lived writer updates random rows of a table larger than its
1 MiB log (ALEX_CHECKPOINT_MB=1), so that its checkpoints carry
(core/carry.c) and their copies span many commits.  Beside it, short-lived
writers (one every half second) open the database, add 1 to fifty of the
same rows and to a counter in one transaction, and exit: each opens a log whose epoch is past its
checkpoint size, and its first commit -- which cannot carry -- checkpoints
the old way while the long-lived writer's copy may be under way; the long
writer's next catch-up must find that copy over and its blocks where the
checkpoint put them.  Each side counts what was acknowledged, and the end
checks the sums exactly.  Prints "carry_writers: ok ..." or "... FAIL ...".
"""
import os
import random
import sqlite3
import subprocess
import sys
import time

ROWS = 20000
EVERY = float(os.environ.get("CARRY_WRITERS_EVERY", "0.5"))  # seconds per new writer
MIN_UPDATES = 3000  # some five carries of a 1 MiB log, however slow the disk
MIN_SHORTS = 3
TOUCH = 50


def setup(path):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("create table t(id integer primary key, v integer, pad blob)")
    db.execute("create table c(n integer)")
    db.execute("insert into c values(0)")
    db.execute("begin")
    for i in range(ROWS):
        db.execute("insert into t values(?, 0, randomblob(300))", (i,))
    db.execute("commit")
    db.close()


def short(path):
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    ids = random.Random(os.getpid()).sample(range(ROWS), TOUCH)
    db.execute("begin immediate")
    for i in ids:
        db.execute("update t set v = v + 1 where id = ?", (i,))
    db.execute("update c set n = n + 1")
    db.execute("commit")
    db.close()


def reap(kids):
    done = failed = 0
    still = []
    for k in kids:
        r = k.poll()
        if r is None:
            still.append(k)
        elif r == 0:
            done += 1
        else:
            failed += 1
    return still, done, failed


def main():
    path, seconds = sys.argv[1], float(sys.argv[2])
    if len(sys.argv) > 3 and sys.argv[3] == "short":
        short(path)
        return 0
    setup(path)
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    rnd = random.Random(7)
    acked = shorts = failed = 0
    start = time.time()
    end, spawn = start + seconds, start + EVERY
    kids = []
    # at least the time asked for, MIN_UPDATES and MIN_SHORTS: a slow
    # disk's FULL commits must still reach several carries with writers
    # beside them (the caller's timeout bounds it)
    while time.time() < end or acked < MIN_UPDATES or shorts + len(kids) < MIN_SHORTS:
        db.execute("update t set v = v + 1 where id = ?", (rnd.randrange(ROWS),))
        acked += 1
        if time.time() >= spawn:
            spawn += EVERY
            kids.append(subprocess.Popen([sys.executable, __file__, path, "0", "short"]))
            kids, d, f = reap(kids)
            shorts += d
            failed += f
    for k in kids:
        if k.wait() == 0:
            shorts += 1
        else:
            failed += 1
    db.close()
    db = sqlite3.connect(path, isolation_level=None)
    total = db.execute("select sum(v) from t").fetchone()[0]
    n = db.execute("select n from c").fetchone()[0]
    ic = db.execute("pragma integrity_check").fetchone()[0]
    db.close()
    ok = (total == acked + TOUCH * shorts and n == shorts and ic == "ok" and not failed
          and shorts >= MIN_SHORTS)
    print("carry_writers: %s updates %d, short writers %d failed %d, sum %d counter %d, %s"
          % ("ok" if ok else "FAIL", acked, shorts, failed, total, n, ic))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
