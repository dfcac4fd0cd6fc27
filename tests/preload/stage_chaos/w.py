# w.py DB TAG [mode] : insert rows with unique ids; print each acknowledged id (flushed)
import sqlite3, sys, os, random, time
db, tag = sys.argv[1], int(sys.argv[2]); mode = sys.argv[3] if len(sys.argv) > 3 else "plain"
con = sqlite3.connect(db, isolation_level=None, timeout=60)
if mode == "wal":
    con.execute("pragma journal_mode=wal")
out = sys.stdout
n = 0
r = random.Random(tag)
stopf = os.environ.get('STOPFILE')
while not (stopf and os.path.exists(stopf)):
    k = r.random()
    ids = [tag * 1000000 + n + i for i in range(1 + (r.random() < 0.2) * r.randint(1, 30))]
    n += len(ids)
    try:
        con.execute("begin immediate")
        for i in ids:
            con.execute("insert into t values(?, ?)", (i, os.urandom(r.choice([10, 100, 900, 3000]))))
        if k < 0.05:
            con.execute("delete from t where id in (select id from t where id % 7 = 3 and id < 0)")
        con.execute("commit")
    except sqlite3.OperationalError as e:
        print("ERR", e, file=sys.stderr, flush=True)
        try: con.execute("rollback")
        except Exception: pass
        if "full" in str(e): time.sleep(0.05)
        continue
    out.write("".join("%d\n" % i for i in ids)); out.flush()
    if k > 0.97:
        con.execute("select count(*), sum(length(v)) from t").fetchone()
    if mode == "slow": time.sleep(r.random() * 0.01)
    # vac: big records, and now and then a VACUUM (a FULL one merges and
    # begins the staging log's next epoch at every commit: review)
    if mode == "vac":
        try:
            con.execute("create table if not exists junk(v blob)")
            con.execute("insert into junk values(?)", (os.urandom(r.choice([100, 3000, 20000])),))
            if r.random() < 0.02:
                con.execute("delete from junk")
                if r.random() < 0.5: con.execute("vacuum")
        except sqlite3.OperationalError as e:
            print("ERR", e, file=sys.stderr, flush=True)
    # reopen: a close (which merges, and checkpoints when alone) and an open
    if mode == "reopen" and r.random() < 0.05:
        con.close(); con = sqlite3.connect(db, isolation_level=None, timeout=60)
con.close()
