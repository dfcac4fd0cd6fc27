#!/bin/bash
# mmap.sh BUILD - PRAGMA mmap_size under ALEX (preload/mmap.c): SQLite reads
# pages through a mapping that must show the database as the engine serves
# it -- its own writes at once, other processes' commits by the time it
# reads page 1's change counter (through the mapping), across WAL mode's
# switches, truncation, growth and page-size changes.  Against real
# clients: SQLite's own mptest (multiwrite01, config01, config02: 0 errors,
# and nothing in SQLite's error log) and speedtest1 (its output identical to
# plain SQLite's), the sqlite3 shell and Python, several processes at once.
# The test build (libalex-test.so, ALEX_TEST_MMAP_CHECK=1) compares every
# mapping with the engine block by block after each catch-up and commit.
set -u
B=$(cd "${1:?usage: mmap.sh BUILD}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
lib=$B/libalex.so tlib=$B/libalex-test.so
tmp=$(mktemp -d /tmp/alex-mmap.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# ---- one process, the sqlite3 shell: results as plain SQLite's ----------
# shell NAME SQL: the output and the .dump under ALEX equal plain SQLite's,
# and the shell mapped the database (ALEX_STATS) without being refused
shell() {
	local d=$tmp/$1 want got
	mkdir -p "$d/p" "$d/a"
	want=$(cd "$d/p" && sqlite3 t.db "$2" 2>&1; sqlite3 t.db .dump)
	got=$(cd "$d/a" && ALEX_STATS=$d/st.json ALEX_TEST_MMAP_CHECK=1 LD_PRELOAD=$tlib sqlite3 t.db "$2" 2>&1
	      ALEX_CHECKPOINT_ON_CLOSE=0 LD_PRELOAD=$lib sqlite3 t.db .dump)
	if [ "$want" != "$got" ]; then
		bad "$1: output differs from plain SQLite's"; diff <(echo "$want") <(echo "$got") | head -5
	elif ! grep -q '"mmaps": [1-9]' "$d"/st.json* || ! grep -q '"mmaps_refused": 0' "$d"/st.json*; then
		bad "$1: the shell did not map the database"; cat "$d"/st.json* | head -3
	else ok; fi
}

# rows made of their number: plain SQLite and ALEX store the same bytes
grow='create table t(id integer primary key, v);
insert into t(v) select printf('\''%.*c'\'', 300, char(65 + value % 26)) from generate_series(1,3000);
insert into t(v) select v from t where id % 3 = 0;
select count(*), sum(length(v)), max(id) from t;'
shell grow "pragma mmap_size=268435456; $grow
update t set v = zeroblob(10) where id % 2 = 0;
create table u as select id, length(v) n from t;
select sum(n), count(*) from u; pragma integrity_check;"

# a mapping smaller than the file: pages past it are read
shell small "pragma mmap_size=28672; $grow
create table u as select * from t where id % 7 = 0; select count(*), sum(length(v)) from u;"

# autovacuum: every delete truncates the file, every insert grows it back
shell autovacuum "pragma auto_vacuum=full; pragma mmap_size=268435456; $grow
delete from t where id > 500; select count(*) from t;
insert into t(v) select printf('%.*c', 500, char(97 + value % 26)) from generate_series(1,2000);
delete from t where id % 2 = 1;
create table u as select id, length(v) n from t; select count(*), sum(n) from u;
pragma integrity_check;"

# VACUUM to other page sizes: the file is rewritten under the mapping
shell pagesize "pragma mmap_size=268435456; $grow
pragma page_size=16384; vacuum; select count(*), sum(length(v)) from t;
pragma page_size=1024; vacuum; create table u as select id from t where id % 5 = 0;
pragma page_size=4096; vacuum; select count(*) from u; pragma integrity_check;"

# a rolled-back transaction and a savepoint: the mapping shows the old pages
shell rollback "pragma mmap_size=268435456; $grow
begin; delete from t; insert into t(v) values(1); rollback;
savepoint a; update t set v = 1; rollback to a; release a;
create table u as select id, length(v) n from t; select count(*), sum(n) from u;"

# WAL mode in and out, the mapping alive throughout (made in either mode)
for first in wal delete; do
	shell "wal-switch-$first" "pragma mmap_size=268435456; pragma journal_mode=$first; $grow
pragma journal_mode=delete; insert into t(v) select printf('%.*c', 200, char(48 + value % 10)) from generate_series(1,500);
create table u as select id, length(v) n from t; select count(*), sum(n) from u;
pragma journal_mode=wal; update t set v = 7 where id % 4 = 0;
create table w as select id, v from t where id % 4 = 0; select count(*), sum(v) from w;
pragma journal_mode=delete; delete from t where id % 3 = 0;
create table x as select count(*) c from t; select * from x; pragma integrity_check;"
done

# ---- several processes: every one sees every acknowledged row -----------
cat >"$tmp/writer.py" <<'EOF'
import random, sqlite3, sys
db, me, n, mm = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
c = sqlite3.connect(db, timeout=60, isolation_level=None)
if mm: c.execute('pragma mmap_size=%d' % mm)
rnd = random.Random(me)
for i in range(n):
    c.execute('begin immediate')
    seen = c.execute('select count(*) from t where who = ?', (me,)).fetchone()[0]
    if seen != i:
        print(me, 'saw', seen, 'of its own', i); sys.exit(1)
    c.execute('insert into t(who, v) values(?, randomblob(?))', (me, rnd.randint(10, 3000)))
    c.execute('update t set v = randomblob(40) where id % 11 = ?', (i % 11,))
    c.execute('commit')
    if i % 10 == 0 and c.execute('pragma quick_check').fetchone()[0] != 'ok':
        print(me, 'quick_check failed at', i); sys.exit(1)
print(me, 'ok')
EOF
multi() { # NAME JOURNAL-MODE
	local db=$tmp/multi-$1.db out
	sqlite3 "$db" "pragma auto_vacuum=full; pragma journal_mode=$2; create table t(id integer primary key, who, v)" >/dev/null
	out=$(for p in 1 2 3 4; do
		mm=$([ $p -le 2 ] && echo 268435456 || echo 0); [ $p = 2 ] && mm=28672
		ALEX_TEST_MMAP_CHECK=1 LD_PRELOAD=$tlib python3 "$tmp/writer.py" "$db" w$p 150 "$mm" 2>&1 &
	done; wait)
	local n
	n=$(LD_PRELOAD=$lib sqlite3 "$db" "select count(*) from t" 2>&1)
	if [ "$(echo "$out" | grep -c ' ok$')" != 4 ] || [ "$n" != 600 ] || echo "$out" | grep -q differs; then
		bad "multi-$1: rows $n, want 600"; echo "$out" | grep -v ' ok$' | head -5
	else ok; fi
}
multi delete delete
multi wal wal

# a program without ALEX writes while the log is empty (it may then): a
# process under ALEX reading through its mapping sees every change
cat >"$tmp/plain.py" <<'EOF'
import os, sqlite3, subprocess, sys
db = sys.argv[1]
env = {k: v for k, v in os.environ.items() if k != 'LD_PRELOAD'}
c = sqlite3.connect(db, isolation_level=None)
c.execute('pragma mmap_size=268435456')
for r in range(8):
    n, s = c.execute('select count(*), sum(length(v)) from t').fetchone()
    subprocess.run(['sqlite3', db, "insert into t(v) select printf('%%.*c', %d, 'p') "
                    "from generate_series(1,300); update t set v = 'u' where id %% 9 = %d"
                    % (100 + r, r)], env=env, check=True)
    want = subprocess.run(['sqlite3', db, 'select count(*), sum(length(v)) from t'], env=env,
                          check=True, capture_output=True, text=True).stdout.strip()
    got = '%d|%d' % c.execute('select count(*), sum(length(v)) from t').fetchone()
    if got != want:
        print('round', r, 'read', got, 'want', want); sys.exit(1)
print('ok')
EOF
sqlite3 "$tmp/plain.db" "create table t(id integer primary key, v);
	insert into t(v) select printf('%.*c', 200, 'x') from generate_series(1,2000)"
out=$(ALEX_TEST_MMAP_CHECK=1 LD_PRELOAD=$tlib python3 "$tmp/plain.py" "$tmp/plain.db" 2>&1)
[ "$out" = ok ] && ok || bad "plain-writer: $out"

# fork: a child maps, writes and closes a database of its own connection
# while the parent's mapping lives; both see every row
cat >"$tmp/fork.py" <<'EOF'
import os, sqlite3, sys
db = sys.argv[1]
c = sqlite3.connect(db, isolation_level=None)
c.execute('pragma mmap_size=268435456')
c.execute('create table t(x)')
rows = lambda n, ch: "with recursive s(i) as (select 1 union all select i + 1 from s where " \
    "i < %d) insert into t select printf('%%.*c', 300, '%s') from s" % (n, ch)
c.execute(rows(500, 'a'))
for r in range(3):
    pid = os.fork()
    if pid == 0:
        d = sqlite3.connect(db, isolation_level=None)
        d.execute('pragma mmap_size=268435456')
        d.execute(rows(200, 'b'))
        n = d.execute('select count(*) from t').fetchone()[0]
        d.close()
        os._exit(0 if n == 700 + 300 * r else 1)
    if os.waitpid(pid, 0)[1] != 0:
        print('child', r, 'failed'); sys.exit(1)
    c.execute(rows(100, 'c'))
    n = c.execute('select count(*) from t').fetchone()[0]
    if n != 800 + 300 * r:
        print('parent read', n, 'in round', r); sys.exit(1)
print(c.execute('pragma integrity_check').fetchone()[0])
EOF
out=$(ALEX_TEST_MMAP_CHECK=1 LD_PRELOAD=$tlib python3 "$tmp/fork.py" "$tmp/fork.db" 2>&1)
[ "$out" = ok ] && ok || bad "fork: $out"

# The hooks take the table's lock before a database's; code that holds a
# database's lock (the in-memory journal growing its buffer) must call the
# real munmap/mremap, or it waits on a thread that maps (a review found the
# deadlock: two connections, one writing a large transaction).  Only real.o
# names them.
users=$(cd "$B/preload" 2>/dev/null && nm -A -u ./*.o 2>/dev/null | grep -w 'munmap\|mremap' |
	cut -d: -f1 | sort -u | grep -v 'real\.o$' | tr '\n' ' ')
[ -d "$B/preload" ] && [ -z "$users" ] && ok || bad "calls through the munmap/mremap hooks from inside: ${users:-no objects}"

# fork while other threads unmap unrelated memory: the child's first munmap
# must not find the table's lock held (without the fork handler: 1 to 4
# children of 1000 hung, in each of three runs)
cat >"$tmp/fork2.py" <<'EOF'
import mmap, os, signal, sqlite3, sys, threading, time
db = sqlite3.connect(sys.argv[1], check_same_thread=False)
db.execute('pragma mmap_size=100000000')
db.execute('create table t(x)'); db.execute('insert into t values(randomblob(10000))'); db.commit()
db.execute('select count(*) from t').fetchall()
stop = False
def churn():
    while not stop:
        m = mmap.mmap(-1, 65536); m.close()
for _ in range(2):
    threading.Thread(target=churn, daemon=True).start()
hung = 0
for i in range(1000):
    pid = os.fork()
    if pid == 0:
        m = mmap.mmap(-1, 4096); m.close(); os._exit(0)
    t0 = time.time()
    while not os.waitpid(pid, os.WNOHANG)[0]:
        if time.time() - t0 > 3:
            hung += 1; os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0); break
        time.sleep(0.001)
stop = True
print('hung', hung)
EOF
out=$(LD_PRELOAD=$lib timeout 300 python3 "$tmp/fork2.py" "$tmp/fork2.db" 2>&1)
[ "$out" = "hung 0" ] && ok || bad "fork beside munmap: $out"

# ---- SQLite's own test programs ------------------------------------------
if "$here/../../tools/sqlite-tests" "$B/sqlite-tests" >"$tmp/st.log" 2>&1; then
	mp=$B/sqlite-tests
	for t in multiwrite01 config01 config02; do
		out=$(cd "$mp/mptest-scripts" && ALEX_TEST_MMAP_CHECK=1 LD_PRELOAD=$tlib "$mp/mptest" "$tmp/mp-$t.db" "$t.test" 2>&1)
		if ! echo "$out" | grep -q '^Summary: 0 errors'; then
			bad "mptest $t: $(echo "$out" | grep '^Summary')"; echo "$out" | grep ERROR | head -5
		elif echo "$out" | grep -q 'os_unix.c\|differs'; then
			bad "mptest $t: $(echo "$out" | grep -m1 'os_unix.c\|differs')"
		else ok; fi
	done
	# speedtest1: SQL output byte for byte plain SQLite's, with and without mmap
	"$mp/speedtest1" --size 10 --verify --output "$tmp/sp-plain.out" "$tmp/sp-plain.db" >/dev/null 2>&1
	for args in "--mmap 268435456" "--mmap 65536" "--mmap 268435456 --journal wal" "--mmap 268435456 --pagesize 1024"; do
		rm -f "$tmp"/sp-alex.*
		"$mp/speedtest1" --size 10 --verify $args --output "$tmp/sp-want.out" "$tmp/sp-want.db" >/dev/null 2>&1
		if ! LD_PRELOAD=$lib "$mp/speedtest1" --size 10 --verify $args --output "$tmp/sp-alex.out" \
			"$tmp/sp-alex.db" >"$tmp/sp.log" 2>&1; then
			bad "speedtest1 $args: failed under ALEX"; tail -3 "$tmp/sp.log"
		elif ! cmp -s "$tmp/sp-want.out" "$tmp/sp-alex.out"; then
			bad "speedtest1 $args: output differs from plain SQLite's"
		else ok; fi
		rm -f "$tmp"/sp-want.*
	done
else
	rc=$?
	[ $rc = 77 ] && echo "mmap: SQLite's test programs could not be had here: $(tail -1 "$tmp/st.log")" &&
		[ -n "${CHECK_SKIP_FILE:-}" ] && echo "mptest/speedtest1 not available" >"$CHECK_SKIP_FILE"
	[ $rc = 77 ] || bad "sqlite-tests: $(tail -1 "$tmp/st.log")"
	[ $rc = 77 ] && [ $fail = 0 ] && { echo "mmap: $pass passed, $fail failed (mptest/speedtest1 skipped)"; exit 77; }
fi

echo "mmap: $pass passed, $fail failed"
[ "$fail" = 0 ]
