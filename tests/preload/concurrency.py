"""Threads, fork and several processes on one database under ALEX.

Four threads, each with its own connection, insert 200 rows each; then two
forked children (each opening its own connection) and the parent insert
300 rows each at the same time.  Every row must be there, integrity_check
ok.  argv: DB [wal]."""
import os
import sqlite3
import sys
import threading

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


threads = [threading.Thread(target=work, args=("thread%d" % i, 200)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
pids = []
for k in range(2):
    pid = os.fork()
    if pid == 0:
        try:
            work("child%d" % k, 300)
        finally:
            os._exit(0)
    pids.append(pid)
work("parent", 300)
for p in pids:
    assert os.waitpid(p, 0)[1] == 0
got = dict(c.execute("select who, count(*) from t group by who"))
want = {"thread%d" % i: 200 for i in range(4)}
want.update({"child0": 300, "child1": 300, "parent": 300})
ok = c.execute("pragma integrity_check").fetchone()[0]
c.close()
if got != want or ok != "ok":
    sys.exit("concurrency: got %s, integrity %s" % (got, ok))
print("concurrency: %d rows from 4 threads and 3 processes, integrity ok" % sum(got.values()))
