"""Several processes reading and writing one database under ALEX.

Roles (argv[1]):
  init DB MODE             the schema; MODE is delete, wal, memory-off or off-off
  worker DB MODE ID P K DIR
                           K write transactions, each followed by a checked
                           read transaction; waits for DIR/go first
  final DB MODE P K        the exact totals, integrity_check, then one more
                           commit (left in the log when ALEX_CHECKPOINT_ON_CLOSE=0)
  closeorder DB MODE       two processes, the one with the older view closing
                           at the wrong moment (see closeorder())

A write transaction (BEGIN IMMEDIATE, retried on SQLITE_BUSY) bumps
counter.n, adds log(proc, i, r), moves money between two acct rows (the sum
stays TOTAL), adds r rows to rows(proc, i, k), adds a 4-24 KiB random blob
with its hash to big and deletes its own blob of 5 transactions ago.  After
COMMIT returns the worker appends i to DIR/ack.ID.txt.  In WAL mode each
worker has wal_autocheckpoint=16 and runs wal_checkpoint(PASSIVE) every 7th
transaction, so WAL checkpoints (which ALEX turns into log records, and which
may pass ALEX_CHECKPOINT_MB) happen in every process while others read.

Every read transaction checks, in one snapshot:
  (a) exactly our own commits (only this process writes its rows);
  (b) for every other process, at least as many of its log rows as its ack
      file listed just before the transaction began (its acknowledged
      commits), never fewer than seen before;
  (c) n == count(log), sum(acct.bal) == TOTAL, every log row has exactly r
      rows (all or nothing), each process has min(commits, 5) blobs, the
      newest ones, and every blob matches its hash; a long read checks
      twice with a pause between and must see the same snapshot.
Inside each write transaction the same invariants and (b) are checked too
before the update (a stale read there would be a lost update).

memory-off and off-off: the database stays in journal_mode=delete (its
persistent mode) and every worker connection sets journal_mode=memory or
off with synchronous=off, so SQLite shows ALEX no sync and no journal file:
its lock calls are the only commit boundary.  Every other write
transaction is deferred (BEGIN, read, then write: SHARED held from the read
and RESERVED taken at the first write), the shape in which a reader that
got SHARED before a writer's commit reached the log would write from the
state before it.  journal_mode=off cannot roll back, so no statement there
may fail halfway: a BUSY comes at BEGIN IMMEDIATE, at the first write of a
deferred transaction (before any page changes; its ROLLBACK only ends a
read) or at COMMIT (retried alone); after any other error the worker stops
without a ROLLBACK.

Violations go to stderr as "a: ...", "b: ...", "c: ..."; the exit status
is a bit mask: 1 writes (a), 2 visibility (b), 4 invariants (c), 8 an
unexpected SQLite error (printed as "e: ...")."""
import hashlib
import os
import random
import sqlite3
import subprocess
import sys
import time

TOTAL = 100000
ACCTS = 8
KEEP = 5  # blobs kept per process
BUSY = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (primary codes)

bad = 0
reports = {}


def report(kind, msg):
    global bad
    bad |= {"a": 1, "b": 2, "c": 4, "e": 8}[kind]
    reports[kind] = reports.get(kind, 0) + 1
    if reports[kind] <= 5:
        print("%s: %s" % (kind, msg), file=sys.stderr, flush=True)


# MODE: (the database's persistent journal_mode, each worker connection's
# journal_mode, its synchronous); None: SQLite's default
MODES = {
    "delete": ("delete", None, None),
    "wal": ("wal", None, None),
    "memory-off": ("delete", "memory", "off"),
    "off-off": ("delete", "off", "off"),
}


def connect(db):
    return sqlite3.connect(db, isolation_level=None, timeout=10)


def connect_mode(db, mode):
    """A connection with MODE's per-connection journal_mode and synchronous."""
    c = connect(db)
    jm, sync = MODES[mode][1:]
    if jm:
        got = c.execute("pragma journal_mode=%s" % jm).fetchone()[0]
        assert got == jm, "journal_mode=%s: %s" % (jm, got)
    if sync:
        c.execute("pragma synchronous=%s" % sync)
        got = c.execute("pragma synchronous").fetchone()[0]
        assert got == 0, "synchronous=%s: %s" % (sync, got)
    return c


# The pragmas of connect_mode, for a Proc's connection (closeorder)
def mode_pragmas(mode):
    jm, sync = MODES[mode][1:]
    return "".join("; c.execute('pragma %s=%s')" % (k, v)
                   for k, v in (("journal_mode", jm), ("synchronous", sync)) if v)


def is_busy(e):
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in BUSY
    return "locked" in str(e) or "busy" in str(e)


def init(db, mode):
    c = connect(db)
    pmode = MODES[mode][0]
    got = c.execute("pragma journal_mode=%s" % pmode).fetchone()[0]
    assert got == pmode, got
    c.executescript("""
        begin;
        create table counter(id integer primary key, n int not null);
        insert into counter values(1, 0);
        create table log(proc int, i int, r int, primary key(proc, i));
        create table acct(id integer primary key, bal int not null);
        create table rows(proc int, i int, k int);
        create index rows_pi on rows(proc, i);
        create table big(id integer primary key, proc int, i int, h text, b blob);
        create index big_pi on big(proc, i);
        create table done(what text);
        commit;""")
    c.execute("begin")
    for a in range(ACCTS):
        c.execute("insert into acct values(?, ?)", (a, TOTAL // ACCTS))
    c.execute("commit")
    c.close()


def snapshot(c, nproc):
    """Everything a read checks, from one snapshot, as comparable values."""
    n = c.execute("select n from counter where id = 1").fetchone()[0]
    per = dict(c.execute("select proc, count(*) from log group by proc"))
    total = c.execute("select sum(bal) from acct").fetchone()[0]
    nlog = sum(per.values())
    partial = c.execute(
        "select count(*) from log l where (select count(*) from rows x "
        "where x.proc = l.proc and x.i = l.i) != l.r").fetchone()[0]
    stray = c.execute("select (select count(*) from rows) - "
                      "(select coalesce(sum(r), 0) from log)").fetchone()[0]
    blobs = {}
    badblob = 0
    for proc, i, h, b in c.execute("select proc, i, h, b from big"):
        blobs.setdefault(proc, []).append(i)
        if hashlib.sha1(b).hexdigest() != h:
            badblob += 1
    return dict(n=n, per=per, nlog=nlog, total=total, partial=partial, stray=stray,
                blobs={p: sorted(v) for p, v in blobs.items()}, badblob=badblob)


def check(s, where, me, mine, acked, seen):
    """Invariants (c) and visibility (b) of one snapshot s."""
    if s["n"] != s["nlog"]:
        report("c", "%s: counter %d but %d log rows" % (where, s["n"], s["nlog"]))
    if s["total"] != TOTAL:
        report("c", "%s: sum(bal) %s, want %d" % (where, s["total"], TOTAL))
    if s["partial"] or s["stray"]:
        report("c", "%s: %d transactions with a partial row set, %d stray rows"
               % (where, s["partial"], s["stray"]))
    if s["badblob"]:
        report("c", "%s: %d blobs differ from their hash" % (where, s["badblob"]))
    for p, cnt in s["per"].items():
        want = list(range(max(0, cnt - KEEP), cnt))
        if s["blobs"].get(p, []) != want:
            report("c", "%s: proc %d has %d commits but blobs %s"
                   % (where, p, cnt, s["blobs"].get(p)))
    for p, a in acked.items():
        cnt = s["per"].get(p, 0)
        if cnt < a:
            report("b", "%s: proc %d acknowledged %d commits, %d visible"
                   % (where, p, a, cnt))
        if cnt < seen.get(p, 0):
            report("b", "%s: proc %d went back from %d to %d commits"
                   % (where, p, seen[p], cnt))
        seen[p] = max(seen.get(p, 0), cnt)
    if s["per"].get(me, 0) != mine:  # only this process writes its rows
        report("a", "%s: own commits %d visible, %d made" % (where, s["per"].get(me, 0), mine))


def read_acks(d, me, nproc):
    acked = {}
    for p in range(nproc):
        if p != me:
            try:
                with open(os.path.join(d, "ack.%d.txt" % p), "rb") as f:
                    acked[p] = f.read().count(b"\n")
            except FileNotFoundError:
                acked[p] = 0
    return acked


def worker(db, mode, me, nproc, k, d):
    rnd = random.Random(me * 7919 + os.getpid())
    c = connect_mode(db, mode)
    wal = mode == "wal"
    nojournal = MODES[mode][1] in ("memory", "off")  # no journal file, no sync
    if wal:
        c.execute("pragma wal_autocheckpoint=16")  # frequent WAL checkpoints
    ack = os.open(os.path.join(d, "ack.%d.txt" % me), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    open(os.path.join(d, "ready.%d" % me), "w").close()
    deadline = time.time() + 20
    while not os.path.exists(os.path.join(d, "go")):
        if time.time() > deadline:
            sys.exit("worker %d: no go" % me)
        time.sleep(0.002)
    seen = {}
    mine = 0
    for i in range(k):
        # ---- the write transaction ----
        r = rnd.randint(1, 6)
        blob = os.urandom(rnd.randint(4096, 24576))
        a, b = rnd.sample(range(ACCTS), 2)
        amt = rnd.randint(1, 50)
        deferred = nojournal and i % 2 == 1
        tries = 0
        while True:
            tries += 1
            acked = read_acks(d, me, nproc)
            wrote = False
            try:
                c.execute("begin" if deferred else "begin immediate")
                s = snapshot(c, nproc)
                check(s, "write txn %d" % i, me, mine, acked, seen)
                # deferred: RESERVED here, BUSY at once (no busy handler
                # for a transaction that holds SHARED) before any change
                c.execute("update counter set n = n + 1 where id = 1")
                wrote = True
                c.execute("insert into log values(?, ?, ?)", (me, i, r))
                c.execute("update acct set bal = bal - ? where id = ?", (amt, a))
                c.execute("update acct set bal = bal + ? where id = ?", (amt, b))
                c.executemany("insert into rows values(?, ?, ?)", [(me, i, x) for x in range(r)])
                c.execute("insert into big(proc, i, h, b) values(?, ?, ?, ?)",
                          (me, i, hashlib.sha1(blob).hexdigest(), blob))
                c.execute("delete from big where proc = ? and i = ?", (me, i - KEEP))
                break
            except sqlite3.DatabaseError as e:
                if wrote and nojournal:  # no journal: a ROLLBACK cannot undo it
                    report("e", "write txn %d: %s (%s), after a change, no rollback"
                           % (i, e, getattr(e, "sqlite_errorname", "")))
                    return
                if c.in_transaction:
                    c.execute("rollback")
                if not isinstance(e, sqlite3.OperationalError) or not is_busy(e) or \
                        tries > (2000 if deferred else 200):
                    report("e", "write txn %d: %s (%s)" % (i, e, getattr(e, "sqlite_errorname", "")))
                    return
                time.sleep(rnd.uniform(0.001, 0.005))
        # BUSY at COMMIT leaves the transaction open: retry the COMMIT alone
        for tries in range(201):
            try:
                c.execute("commit")
                break
            except sqlite3.DatabaseError as e:
                if not isinstance(e, sqlite3.OperationalError) or not is_busy(e) or tries == 200:
                    report("e", "commit %d: %s (%s)" % (i, e, getattr(e, "sqlite_errorname", "")))
                    return
                time.sleep(rnd.uniform(0.001, 0.005))
        mine += 1
        os.write(ack, b"%d\n" % i)  # acknowledged: COMMIT returned

        # ---- a read transaction (c), sometimes long; and (b) ----
        long_read = i % 3 == 1
        tries = 0
        while True:
            tries += 1
            acked = read_acks(d, me, nproc)
            try:
                c.execute("begin")
                s = snapshot(c, nproc)
                check(s, "read after %d" % i, me, mine, acked, seen)
                if long_read:
                    time.sleep(rnd.uniform(0.002, 0.02))
                    s2 = snapshot(c, nproc)
                    if s2 != s:
                        report("c", "read after %d: snapshot changed inside a read transaction: "
                               "n %d -> %d" % (i, s["n"], s2["n"]))
                c.execute("commit")
                break
            except sqlite3.DatabaseError as e:
                if c.in_transaction:
                    c.execute("rollback")
                if not isinstance(e, sqlite3.OperationalError) or not is_busy(e) or tries > 200:
                    report("e", "read after %d: %s (%s)" % (i, e, getattr(e, "sqlite_errorname", "")))
                    return
                time.sleep(rnd.uniform(0.001, 0.005))
        if wal and i % 7 == 3:
            try:  # a checkpoint by this process while the others read
                c.execute("pragma wal_checkpoint(passive)").fetchall()
            except sqlite3.OperationalError as e:
                if not is_busy(e):
                    report("e", "checkpoint after %d: %s" % (i, e))
                    return
    c.close()


def final(db, mode, nproc, k):
    c = connect(db)  # the database's own journal_mode
    s = snapshot(c, nproc)
    want_per = {p: k for p in range(nproc)}
    ok = (s["n"] == nproc * k and s["nlog"] == nproc * k and s["per"] == want_per and
          s["total"] == TOTAL and not s["partial"] and not s["stray"] and not s["badblob"] and
          s["blobs"] == {p: list(range(max(0, k - KEEP), k)) for p in range(nproc)})
    integ = c.execute("pragma integrity_check").fetchone()[0]
    jm = c.execute("pragma journal_mode").fetchone()[0]
    print("final: n=%d log=%d per=%s sum=%s partial=%d stray=%d badblob=%d integrity=%s mode=%s"
          % (s["n"], s["nlog"], s["per"], s["total"], s["partial"], s["stray"], s["badblob"],
             integ, jm))
    c.execute("insert into done values('final')")  # this one stays in the log
    c.close()
    if not ok or integ != "ok" or jm != MODES[mode][0]:
        sys.exit(1)


class Proc:
    """Another process running one line of Python at a time (c: its connection)."""

    CODE = ("import sqlite3, sys\ndb = sys.argv[1]\nfor line in sys.stdin:\n"
            "    try:\n        exec(line)\n        print('ok', flush=True)\n"
            "    except Exception as e:\n        print('error: %s' % e, flush=True)\n")

    def __init__(self, db):
        self.p = subprocess.Popen([sys.executable, "-c", self.CODE, db], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)

    def do(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        r = self.p.stdout.readline().strip()
        if r != "ok":
            print("step %r: %s" % (line[:60], r))

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def closeorder(db, mode):
    """Two processes; the one whose view is older closes at the wrong moment.
    delete (and memory-off, off-off, with their pragmas on both
    connections): A writes, B writes (B's commit is newer than A's last look), A
    closes while B stays open.  wal: B opens and reads; A writes, checkpoints
    the WAL (into the ALEX log), writes again and closes; B closes last, and
    SQLite's final WAL checkpoint runs in B.  Prints the rows and
    integrity_check a new connection sees; all 20 / 310 rows must be there."""
    a, b = Proc(db), Proc(db)
    a.do("c = sqlite3.connect(db, isolation_level=None)" + mode_pragmas(mode))
    if mode == "wal":
        a.do("c.execute('pragma journal_mode=wal'); c.execute('pragma wal_autocheckpoint=0'); "
             "c.execute('create table t(x)')")
        b.do("c = sqlite3.connect(db, isolation_level=None); c.execute('select count(*) from t').fetchall()")
        a.do("[c.execute('insert into t values(randomblob(1000))') for i in range(300)]")
        a.do("c.execute('pragma wal_checkpoint(truncate)').fetchall()")
        a.do("[c.execute('insert into t values(randomblob(1000))') for i in range(10)]")
        a.close()
        b.close()
    else:
        a.do("c.execute('create table t(x)'); [c.execute('insert into t values(?)', (i,)) for i in range(10)]")
        b.do("c = sqlite3.connect(db, isolation_level=None)" + mode_pragmas(mode) + "; "
             "[c.execute('insert into t values(?)', (i,)) for i in range(10, 20)]")
        a.close()
        b.do("assert c.execute('select count(*) from t').fetchone()[0] == 20, 'B lost its rows'")
        b.close()
    c = connect(db)
    try:
        print(c.execute("select count(*) from t").fetchone()[0],
              c.execute("pragma integrity_check").fetchone()[0])
    except sqlite3.Error as e:
        print("error:", e)


if __name__ == "__main__":
    role = sys.argv[1]
    if role == "init":
        init(sys.argv[2], sys.argv[3])
    elif role == "worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]),
               sys.argv[7])
        sys.exit(bad)
    elif role == "closeorder":
        closeorder(sys.argv[2], sys.argv[3])
    elif role == "final":
        final(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit("usage: multiproc.py init|worker|final|closeorder ...")
