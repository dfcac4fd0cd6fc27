"""wal_openers.py - programs without ALEX beside ALEX processes in WAL mode.

In WAL mode ALEX keeps its log out of the way: SQLite writes the database
file itself, so a program without ALEX -- the sqlite3 shell, or a replicator
like Litestream that reads -wal and runs its own checkpoints -- reads exactly
the committed contents and its writes are kept.  Each scenario prints one
line "ok ..." or "FAIL ..."; the driver (wal_openers.sh) counts them.

  wal_openers.py SCENARIO DIR LIBALEX
"""
import os
import signal
import sqlite3
import subprocess
import sys
import time

PY = sys.executable


def alex_env(lib):
    e = dict(os.environ)
    e["LD_PRELOAD"] = lib
    return e


def plain_env():
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    return e


def plain(db, sql):
    r = subprocess.run(["sqlite3", db, sql], env=plain_env(), capture_output=True, text=True)
    return r.returncode, r.stdout.split(), r.stderr.strip()


def say(ok, what):
    print(("ok " if ok else "FAIL ") + what, flush=True)


def schema_change(d, lib):
    """The issue's case: a truncating WAL checkpoint under ALEX, then a
    schema change (page 1 in -wal), the connection kept open; a plain
    sqlite3 counts, inserts, and ALEX sees its row."""
    db = d + "/s.db"
    code = r'''
import sqlite3, subprocess, sys, os
db = sys.argv[1]
c = sqlite3.connect(db, isolation_level=None)
c.execute("pragma journal_mode=wal")
c.execute("create table t(x)")
c.execute("begin")
for i in range(3000): c.execute("insert into t values(?)", (i,))
c.execute("commit")
c.execute("pragma wal_checkpoint(truncate)")
for i in range(10): c.execute("insert into t values(?)", (i,))
c.execute("create table u(y)")
env = dict(os.environ); env.pop("LD_PRELOAD")
r = subprocess.run(["sqlite3", db, "select count(*) from t; insert into t values(-1); select count(*) from t"],
                   env=env, capture_output=True, text=True)
print(r.returncode, " ".join(r.stdout.split()), c.execute("select count(*) from t").fetchone()[0],
      c.execute("pragma integrity_check").fetchone()[0])
'''
    r = subprocess.run([PY, "-c", code, db], env=alex_env(lib), capture_output=True, text=True)
    out = r.stdout.strip()
    say(out == "0 3010 3011 3011 ok", "schema change after a truncating checkpoint: '%s' %s" % (out, r.stderr.strip()[:200]))
    rc, got, err = plain(db, "select count(*) from t; pragma integrity_check")
    say(got == ["3011", "ok"] and not os.path.exists(db + "-alex"),
        "after the ALEX process closed: plain reads %s, log left: %s" % (got, os.path.exists(db + "-alex")))


def killed_writer(d, lib):
    """An ALEX WAL writer killed with SIGKILL: plain SQLite recovers the WAL
    and reads every acknowledged row; its write is seen by ALEX after."""
    db = d + "/k.db"
    code = r'''
import os, signal, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("pragma journal_mode=wal")
c.execute("create table t(x)")
for i in range(500):
    c.execute("insert into t values(?)", (i,))
    if i == 300: c.execute("pragma wal_checkpoint(passive)")
os.kill(os.getpid(), signal.SIGKILL)
'''
    subprocess.run([PY, "-c", code, db], env=alex_env(lib), capture_output=True)
    rc, got, err = plain(db, "select count(*) from t; pragma integrity_check; insert into t values(-1)")
    say(rc == 0 and got == ["500", "ok"], "plain after a killed ALEX WAL writer: %s %s" % (got, err))
    r = subprocess.run(["sqlite3", db, "select count(*) from t; pragma integrity_check"], env=alex_env(lib),
                       capture_output=True, text=True)
    say(r.stdout.split() == ["501", "ok"], "ALEX after the plain write: %s %s" % (r.stdout.split(), r.stderr.strip()))


WRITER = r'''
import os, sqlite3, sys, time
db, w, n, acks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
c = sqlite3.connect(db, isolation_level=None, timeout=30)
f = open(acks, "a", buffering=1)
for i in range(1, n + 1):
    c.execute("begin immediate")
    c.execute("insert into t(w, i, pad) values(?, ?, ?)", (w, i, os.urandom(200)))
    c.execute("update c set n = n + 1 where w = ?", (w,))
    c.execute("commit")
    f.write("%d %d\n" % (w, i))
    if i % 37 == 0: c.execute("pragma wal_checkpoint(passive)")
'''

REPLICATOR = r'''
import os, sqlite3, sys, time
# like Litestream: no ALEX; holds read transactions, copies -wal, checkpoints
# on its own schedule, and writes too
db, writers, acks = sys.argv[1], int(sys.argv[2]), sys.argv[3]
c = sqlite3.connect(db, isolation_level=None, timeout=30)
f = open(acks, "a", buffering=1)
bad, reads, ckpts, mine = 0, 0, 0, 0
stop = db + ".stop"
while True:
    last = os.path.exists(stop)
    c.execute("begin")
    rows = dict(c.execute("select w, count(*) from t group by w").fetchall())
    ctr = dict(c.execute("select w, n from c").fetchall())
    try:
        with open(db + "-wal", "rb") as wal:
            wal.read()
    except FileNotFoundError:
        pass
    time.sleep(0.002)
    again = dict(c.execute("select w, count(*) from t group by w").fetchall())
    c.execute("commit")
    reads += 1
    for w, n in ctr.items():
        if rows.get(w, 0) != n or again.get(w, 0) != n:
            bad += 1
    if reads % 5 == 0:
        c.execute("pragma wal_checkpoint(%s)" % ("truncate" if reads % 10 == 0 else "passive"))
        ckpts += 1
    if reads % 3 == 0:
        mine += 1
        c.execute("begin immediate")
        c.execute("insert into t(w, i, pad) values(99, ?, x'00')", (mine,))
        c.execute("update c set n = n + 1 where w = 99")
        c.execute("commit")
        f.write("99 %d\n" % mine)
    if last:
        break
print(reads, ckpts, mine, bad)
'''


def replicator(d, lib, writers=2, n=300):
    """Two ALEX writers and a Litestream-like program without ALEX."""
    db = d + "/r.db"
    acks = d + "/acks"
    setup = sqlite3.connect(db, isolation_level=None)
    setup.execute("pragma journal_mode=wal")
    setup.execute("create table t(w, i, pad)")
    setup.execute("create table c(w primary key, n)")
    for w in list(range(writers)) + [99]:
        setup.execute("insert into c values(?, 0)", (w,))
    setup.close()
    rep = subprocess.Popen([PY, "-c", REPLICATOR, db, str(writers), acks], env=plain_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ws = [subprocess.Popen([PY, "-c", WRITER, db, str(w), str(n), acks], env=alex_env(lib),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
          for w in range(writers)]
    werr = [p.communicate()[1] for p in ws]
    open(db + ".stop", "w").close()
    rout, rerr = rep.communicate()
    fails = [e.strip().splitlines()[-1] for e in werr + [rerr] if e.strip()]
    reads, ckpts, mine, bad = (rout.split() + ["?"] * 4)[:4]
    acked = {}
    for line in open(acks):
        w, i = map(int, line.split())
        acked.setdefault(w, set()).add(i)
    r = subprocess.run(["sqlite3", db, "select w || ':' || i from t; pragma integrity_check"],
                       env=alex_env(lib), capture_output=True, text=True)
    have = {}
    lines = r.stdout.split()
    for x in lines[:-1]:
        w, i = map(int, x.split(":"))
        have.setdefault(w, set()).add(i)
    lost = sum(len(acked[w] - have.get(w, set())) for w in acked)
    say(not fails and bad == "0" and lost == 0 and lines[-1:] == ["ok"] and
        all(len(acked.get(w, ())) == n for w in range(writers)),
        "2 ALEX writers + a replicator without ALEX: %s reads (%s inconsistent), %s checkpoints, "
        "%s own writes, %d acknowledged rows lost, integrity %s %s" %
        (reads, bad, ckpts, mine, lost, lines[-1:], fails))
    rc, got, err = plain(db, "select count(*) from t; pragma integrity_check")
    total = sum(len(v) for v in acked.values())
    say(got == [str(total), "ok"] and not os.path.exists(db + "-alex"),
        "plain SQLite afterwards: %s, want %d rows; log left: %s" % (got, total, os.path.exists(db + "-alex")))


if __name__ == "__main__":
    scenario, d, lib = sys.argv[1:4]
    {"schema": schema_change, "killed": killed_writer, "replicator": replicator}[scenario](d, lib)
