"""Threads, fork and several processes on one database under ALEX.

Four threads, each with its own connection, insert 200 rows each; then two
forked children (each opening its own connection) and the parent insert
300 rows each at the same time.  Every row must be there, integrity_check
ok.  argv: DB [wal]."""
import os
import sqlite3
import sys
import threading
import traceback

path = sys.argv[1]
wal = len(sys.argv) > 2 and sys.argv[2] == "wal"


def conn():
    return sqlite3.connect(path, isolation_level=None, timeout=60)


c = conn()
if wal:
    assert c.execute("pragma journal_mode=wal").fetchone()[0] == "wal"
c.execute("create table if not exists t(id integer primary key, who text, n int)")


def work(tag, n):
    cc = conn()
    for i in range(n):
        if i % 10 == 9:  # some multi-row transactions too
            cc.execute("begin immediate")
            cc.execute("insert into t(who, n) values(?, ?)", (tag, i))
            cc.execute("update t set n = n + 1 where id = (select max(id) from t)")
            cc.execute("commit")
        else:
            cc.execute("insert into t(who, n) values(?, ?)", (tag, i))
    cc.close()


errors = []  # what failed, in threads, children or the parent


def guarded(tag, n):
    try:
        work(tag, n)
    except BaseException:
        traceback.print_exc()
        errors.append("%s raised" % tag)


threads = [threading.Thread(target=guarded, args=("thread%d" % i, 200)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
pids = []
for k in range(2):
    pid = os.fork()
    if pid == 0:
        # a child that raises says so: its traceback, and a non-zero status
        # (os._exit, so that it never runs the parent's code after the fork)
        status = 1
        try:
            work("child%d" % k, 300)
            status = 0
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(status)
    pids.append(pid)
guarded("parent", 300)
for k, p in enumerate(pids):  # every child waited for, every status checked
    st = os.waitpid(p, 0)[1]
    if os.WIFSIGNALED(st):
        errors.append("child%d killed by signal %d" % (k, os.WTERMSIG(st)))
    elif os.WEXITSTATUS(st) != 0:
        errors.append("child%d exited %d" % (k, os.WEXITSTATUS(st)))
got = dict(c.execute("select who, count(*) from t group by who"))
want = {"thread%d" % i: 200 for i in range(4)}
want.update({"child0": 300, "child1": 300, "parent": 300})
ok = c.execute("pragma integrity_check").fetchone()[0]
c.close()
if errors or got != want or ok != "ok":
    sys.exit("concurrency: %sgot %s, integrity %s" % ("".join(e + "; " for e in errors), got, ok))
print("concurrency: %d rows from 4 threads and 3 processes, integrity ok" % sum(got.values()))
