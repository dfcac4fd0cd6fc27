"""Writer for crash.sh: appends rows to t(id, payload) forever, in
autocommit statements and in small explicit transactions, printing each id
once its COMMIT has returned (the acknowledgement the test checks)."""
import sqlite3
import sys

con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("create table if not exists t(id integer primary key, payload blob)")
seed = int(sys.argv[2])
nxt = (con.execute("select max(id) from t").fetchone()[0] or 0) + 1
out = sys.stdout
while True:
    seed = (seed * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    size = 100 if seed % 10 else 20000 + seed % 50000  # some overflow pages
    n = 1 if seed % 3 else 1 + seed % 20
    if n == 1:
        con.execute("insert into t values(?, ?)", (nxt, bytes([nxt % 251]) * size))
    else:
        con.execute("begin")
        for k in range(n):
            con.execute("insert into t values(?, ?)", (nxt + k, bytes([(nxt + k) % 251]) * size))
        con.execute("commit")
    nxt += n
    out.write("%d\n" % (nxt - 1))
    out.flush()
