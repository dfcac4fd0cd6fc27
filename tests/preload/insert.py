"""The ALEX paper's workload: N autocommit INSERTs of a 100-byte value into
kv(key INTEGER PRIMARY KEY, value BLOB).  Prints one line:
inserts_per_second integrity_check rows.  Optional third argument: a
journal_mode to set first (e.g. WAL)."""
import sqlite3
import sys
import time

path, n = sys.argv[1], int(sys.argv[2])
con = sqlite3.connect(path, isolation_level=None)
if len(sys.argv) > 3:
    con.execute("pragma journal_mode=" + sys.argv[3])
con.execute("create table if not exists kv(key integer primary key, value blob)")
value = b"v" * 100
t = time.perf_counter()
for i in range(n):
    con.execute("insert into kv(value) values(?)", (value,))
dt = time.perf_counter() - t
ok = con.execute("pragma integrity_check").fetchone()[0]
rows = con.execute("select count(*) from kv").fetchone()[0]
con.close()
print("%.0f %s %d" % (n / dt, ok, rows))
