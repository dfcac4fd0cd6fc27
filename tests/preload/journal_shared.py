# journal_shared.py DIR MODE LIB - a cold journal is not removed while a
# program without ALEX holds SHARED with it open.  Plain SQLite keeps its
# journal open in TRUNCATE and PERSIST mode until it lets its lock go, and
# writes its next transaction's into that file.  This program (plain): a
# table, a SELECT kept open (SHARED), one INSERT (the journal opened); then
# an INSERT of the sqlite3 shell under ALEX (LIB), refused by the lock;
# then a transaction here that spills pages into the database, and SIGKILL.
# Its journal must still be there to roll that back (review: removed, the
# database was "malformed").  Prints: the journal there after the ALEX
# INSERT, then, read by plain sqlite3 after the kill, integrity_check, the
# rows, and the rows the killed transaction changed.
import os, signal, sqlite3, subprocess, sys

d, jm, lib = sys.argv[1], sys.argv[2], sys.argv[3]
db = d + "/t.db"
plain = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
pid = os.fork()
if pid == 0:
    c = sqlite3.connect(db, isolation_level=None)
    c.execute("pragma journal_mode=" + jm)
    c.execute("create table t(k integer primary key, v)")
    c.execute("create index tv on t(v)")
    c.execute("begin")
    for i in range(2000):
        c.execute("insert into t values(?, ?)", (i, "x%06d" % i * 10))
    c.execute("commit")
    c.execute("pragma cache_size=5")
    cur = c.execute("select k from t")
    cur.fetchone()
    c.execute("insert into t values(100000, 'a')")
    subprocess.run(["sqlite3", db, ".timeout 200", "pragma journal_mode=" + jm,
                    "insert into t values(200000, 'b')"],
                   env=dict(plain, LD_PRELOAD=lib), capture_output=True)
    print(os.path.exists(db + "-journal"), flush=True)
    c.execute("begin")
    c.execute("update t set v = 'y' || v where k < 1500")
    c.execute("delete from t where k >= 1500 and k < 1900")
    os.kill(os.getpid(), signal.SIGKILL)
os.waitpid(pid, 0)
out = subprocess.run(["sqlite3", db, "pragma integrity_check",
                      "select count(*), sum(v like 'y%') from t"],
                     env=plain, capture_output=True, text=True).stdout.split()
print(" ".join(out[:2]).replace("|", " "))
