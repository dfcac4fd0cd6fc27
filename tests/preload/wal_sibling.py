"""WAL mode: a reader that starts without any lock call we can see.

Process A writes; process D holds an old read transaction, so A's passive
checkpoint copies only part of the WAL into the database.  Here, connection
C1 already holds the read mark a new reader will want, so when C2 starts,
SQLite takes no lock (the mark is shared inside the process) -- and reads
pages A's checkpoint put in the database.  C2 must see table t2.
argv: DIR.  Prints what C2 sees."""
import sqlite3
import subprocess
import sys

db = sys.argv[1] + "/x.db"


class Worker:
    """A Python process running statements sent to it, one line each."""

    def __init__(self):
        code = ("import sqlite3, sys\n"
                "db = sys.argv[1]\n"
                "for line in sys.stdin:\n"
                "    exec(line.replace('\\\\n', '\\n'))\n"
                "    print('done', flush=True)\n")
        self.p = subprocess.Popen([sys.executable, "-c", code, db], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)

    def do(self, code):
        self.p.stdin.write(code.replace("\n", "\\n") + "\n")
        self.p.stdin.flush()
        assert self.p.stdout.readline().strip() == "done"


A, D = Worker(), Worker()
A.do("c = sqlite3.connect(db, isolation_level=None); c.execute('pragma journal_mode=wal'); "
     "c.execute('pragma wal_autocheckpoint=0'); c.execute('create table t(x)')")
keep = sqlite3.connect(db, isolation_level=None)
keep.execute("select count(*) from sqlite_master").fetchall()
A.do("c.execute('create table t2(y)')\nfor i in range(50): c.execute('insert into t2 values(?)', (i,))")
D.do("c = sqlite3.connect(db, isolation_level=None); c.execute('begin'); "
     "c.execute('select count(*) from t2').fetchone()")
A.do("for i in range(50): c.execute('insert into t values(?)', (i,))")
c1 = sqlite3.connect(db, isolation_level=None)
c1.execute("begin")
c1.execute("select count(*) from t2").fetchone()
A.do("c.execute('pragma wal_checkpoint(passive)').fetchone()")
c2 = sqlite3.connect(db, isolation_level=None)
try:
    print(c2.execute("select count(*) from t2").fetchone()[0])
except sqlite3.Error as e:
    print("error:", e)
for w in (A, D):
    w.p.stdin.close()
    w.p.wait()
