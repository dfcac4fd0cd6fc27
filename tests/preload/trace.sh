#!/bin/bash
# trace.sh BUILD - the tracing mode (ALEX_MODE=trace, ALEX_TRACE, alex-run
# --trace) and `alex trace`, on the sqlite3 shell and Python:
#  - on TRACE_INSERTS (5000) autocommit inserts its counts of system calls
#    equal strace -f -c's on the same run: traced only (every call kind,
#    strace -P on the database's files) and under ALEX (the kinds that only
#    the databases' files see here: ld.so reads libc with pread64 before any
#    library of ours is loaded);
#  - transactions from the lock calls (rollback and WAL), lock names, page
#    labels; --json, --csv, --perfetto, --plot;
#  - tracing changes nothing the program sees; a trace file that cannot be
#    written costs one line on stderr; fork, exec and threads; --trace-all;
#  - a truncated or damaged trace: the byte named, the valid part reported.
set -u
skip() { [ -n "${CHECK_SKIP_FILE:-}" ] && echo "$*" >"$CHECK_SKIP_FILE"; exit 77; }
B=$(cd "${1:?usage: trace.sh BUILD}" && pwd)
lib=$B/libalex.so A=$B/alex
N=${TRACE_INSERTS:-5000}
for tool in sqlite3 python3 strace; do
	command -v $tool >/dev/null || { echo "trace: skipped: $tool not found"; skip "$tool not found"; }
done
tmp=$(mktemp -d /tmp/alex-trace.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0 fail=0
t() { local what=$1; shift; if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $what"; fi; }
# jcheck FILE EXPR: a Python expression over the JSON object d
jcheck() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); assert ($2), d" "$1"; }
# agree STRACE_C_FILE JSON KINDS...: strace -c's count of each kind equals
# the trace's count of calls that reached the kernel
agree() {
	local s=$1 j=$2; shift 2
	python3 - "$s" "$j" "$@" <<'PY'
import json, sys
counts = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and f[-1].isidentifier() and f[3].isdigit():
        counts[f[-1]] = int(f[3])
d = json.load(open(sys.argv[2]))['syscalls']
bad = [(k, counts.get(k, 0), d.get(k, 0)) for k in sys.argv[3:] if counts.get(k, 0) != d.get(k, 0)]
print("  strace -c vs trace:", {k: (counts.get(k, 0), d.get(k, 0)) for k in sys.argv[3:]})
sys.exit(1 if bad or not any(counts.values()) else 0)
PY
}

python3 -c "
print('create table t(id integer primary key, v text);')
for i in range($N): print(\"insert into t(v) values('%s');\" % ('x' * 100))" >ins.sql
kinds="pread64,pwrite64,fsync,fdatasync,fcntl,unlink,openat,close,ftruncate"

# ---- traced only: every call passes through, counted as strace counts ----
strace -f -c -o plain.strace -e trace=$kinds -P "$tmp/p.db" -P "$tmp/p.db-journal" -P "$tmp" \
	env ALEX_MODE=trace ALEX_TRACE="$tmp/p.trace" LD_PRELOAD="$lib" sqlite3 p.db <ins.sql
t "traced: the program ran" [ "$(sqlite3 p.db 'select count(*) from t')" = "$N" ]
"$A" trace --json p.trace >p.json
t "traced: alex trace --json exit 0" [ $? -eq 0 ]
t "traced: counts equal strace -f -c's" agree plain.strace p.json ${kinds//,/ }
t "traced: one write transaction per statement" jcheck p.json \
	"d['transactions']['write'] == $N + 1 and d['estimate']['alex_full_syncs'] == $N + 1"
t "traced: SQLite's syncs per transaction (journal, directory, database)" jcheck p.json \
	"d['transactions']['syncs_asked']['p50'] == 4 and d['calls']['dir']['fdatasync'] == $N + 1"
t "traced: nothing served (SQLite alone)" jcheck p.json "not d['served']"
"$A" trace --transactions 2 p.trace >p.txt
t "report: locks decoded" grep -q 'write RESERVED' p.txt
t "report: EXCLUSIVE and PENDING" grep -q 'write EXCLUSIVE' p.txt
t "report: pages labelled" grep -q 'pwrite64  db       4096 B at 4096 page 2' p.txt
t "report: the estimate" grep -q '^  ALEX full:   about' p.txt
t "report: latency table" grep -q '^latency per call' p.txt

# ---- under ALEX: what SQLite asked for beside what ALEX did ---------------
strace -f -c -o alex.strace -e trace=$kinds \
	env ALEX_TRACE="$tmp/a.trace" LD_PRELOAD="$lib" sqlite3 a.db <ins.sql
t "alex: the program ran" [ "$(sqlite3 a.db 'select count(*) from t')" = "$N" ]
"$A" trace --json a.trace >a.json
t "alex: counts equal strace -f -c's" agree alex.strace a.json \
	pwrite64 fsync fdatasync fcntl unlink ftruncate
t "alex: SQLite's database writes served, the log's made" jcheck a.json \
	"d['served']['db']['pwrite64'] == d['calls']['db']['pwrite64'] > 0 and
	 d['calls']['log']['fdatasync'] >= $N + 1 and d['estimate'] is None"
t "alex: one log sync per write transaction" jcheck a.json \
	"d['transactions']['syncs_kernel']['p50'] == 1 and d['transactions']['write'] == $N + 1"

# ---- tracing changes nothing the program sees --------------------------
sqlite3 p.db .dump >p.dump
LD_PRELOAD="$lib" ALEX_MODE=trace ALEX_TRACE="$tmp/d.trace" sqlite3 p.db .dump >d.dump
t "a traced .dump equals the plain one" cmp -s p.dump d.dump

# ---- WAL mode: transactions from -shm's locks, frames labelled ------------
(echo 'pragma journal_mode=wal;'; head -201 ins.sql) |
	LD_PRELOAD="$lib" ALEX_MODE=trace ALEX_TRACE="$tmp/w.trace" sqlite3 w.db >/dev/null
"$A" trace --json w.trace >w.json
# the pragma's rollback-mode read and write, SQLite building its wal-index
# under the write lock, then the 201 statements
t "wal: write transactions counted from the WAL write lock" jcheck w.json \
	"d['transactions']['write'] == 203 and d['transactions']['read'] == 1"
"$A" trace --csv w.trace >w.csv
t "wal: frame headers name their pages" python3 -c "
import csv, sys
rows = list(csv.DictReader(open('w.csv')))
assert any(r['role'] == 'wal' and r['call'] == 'pwrite64' and r['length'] == '24' and int(r['page']) > 0 for r in rows)
assert any(r['lock'] == 'read WAL_READ0' or r['lock'].startswith('read WAL_READ') for r in rows)
"

# ---- the outputs -------------------------------------------------------------
"$A" trace --csv p.trace >p.csv
t "csv: a row per call" [ "$(($(wc -l <p.csv) - 1))" -eq "$(python3 -c "
import json; d = json.load(open('p.json')); print(d['events'] - len(d['processes']))")" ]
"$A" trace --perfetto p.trace >p.perfetto
t "perfetto: valid JSON, a slice per transaction" python3 -c "
import json
d = json.load(open('p.perfetto'))
e = d['traceEvents']
assert sum(1 for x in e if x.get('cat') == 'transaction') == $N + 2
assert any(x.get('args', {}).get('page') for x in e if x.get('cat') == 'sqlite')
"
if command -v gnuplot >/dev/null; then
	"$A" trace --plot p.png w.trace
	t "plot: a PNG" [ "$(head -c 4 p.png | od -An -c | tr -d ' ')" = "211PNG" ]
else
	echo "trace: --plot not tried: gnuplot not found"
fi

# ---- descriptors copied, odd names ----------------------------------------------
cat >dup.py <<'PY'
import os
fd = os.open('d.db', os.O_RDWR | os.O_CREAT, 0o644)
a = os.dup(fd); b = os.dup2(fd, 40)
os.pwrite(a, b'x' * 4096, 4096); os.pwrite(b, b'y' * 4096, 8192)
os.close(a); os.close(b); os.close(fd)
PY
LD_PRELOAD="$lib" ALEX_MODE=trace ALEX_TRACE="$tmp/dup.trace" python3 dup.py
"$A" trace --csv dup.trace >dup.csv
t "dup: writes through copies belong to the file" python3 -c "
import csv
rows = [r for r in csv.DictReader(open('dup.csv')) if r['call'] == 'pwrite64']
assert len(rows) == 2 and all(r['file'] == 'd.db' for r in rows), rows
# os.dup is fcntl(F_DUPFD_CLOEXEC), os.dup2 is dup2
calls = [(r['call'], r['offset']) for r in csv.DictReader(open('dup.csv'))]
assert calls.count(('dup', '3')) == 1 and calls.count(('fcntl', '1030')) == 1, calls
"
name=$(printf 'caf\351.db')
LD_PRELOAD="$lib" ALEX_MODE=trace ALEX_TRACE="$tmp/u.trace" sqlite3 "$name" 'create table t(x)'
t "a name that is not UTF-8: --json stays JSON" sh -c "'$A' trace --json u.trace | python3 -m json.tool >/dev/null"
t "a name that is not UTF-8: --perfetto stays JSON" sh -c "'$A' trace --perfetto u.trace | python3 -m json.tool >/dev/null"
if command -v gnuplot >/dev/null; then
	"$A" trace --plot "q'; system('touch PWNED'); print '.png" u.trace 2>/dev/null
	t "plot: a quote in a file name is not a command" [ ! -e PWNED ]
fi

# ---- a trace file that cannot be written ----------------------------------
out=$(LD_PRELOAD="$lib" ALEX_MODE=trace ALEX_TRACE=/nonexistent/dir/t.trace \
	sqlite3 p.db 'select count(*) from t' 2>err)
t "bad path: the program's result" [ "$out" = "$N" ]
t "bad path: one line on stderr naming the file" [ "$(wc -l <err)" -eq 1 ]
t "bad path: the line" grep -q 'trace /nonexistent/dir/t.trace: cannot open' err
out=$(LD_PRELOAD="$lib" ALEX_MODE=trace ALEX_TRACE=/dev/full sqlite3 full.db <ins.sql 2>err; echo $?)
t "full disk: the program goes on" [ "$out" = 0 ]
t "full disk: one line on stderr" [ "$(wc -l <err)" -eq 1 ] && grep -q 'cannot write' err

# ---- fork, exec, threads, --trace-all -------------------------------------------
"$B/alex-run" --trace="$tmp/f.trace" sh -c \
	'sqlite3 f1.db "create table t(x); insert into t values(1)"; sqlite3 f2.db "create table t(x)"'
"$A" trace --json f.trace >f.json
t "exec: a process per program, both databases" jcheck f.json \
	"len(d['processes']) >= 3 and d['transactions']['write'] >= 3"
cat >thr.py <<'PY'
import os, sqlite3, threading
def work(k):
    c = sqlite3.connect('th%d.db' % k)
    c.execute('create table t(x)')
    for i in range(50):
        with c: c.execute('insert into t values(?)', (i,))
    c.close()
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
pid = os.fork()
if pid == 0:
    work(9); os._exit(0)
os.waitpid(pid, 0)
f = open('plain.txt', 'w'); f.write('x'); f.flush(); os.fsync(f.fileno()); f.close()
PY
"$B/alex-run" --trace="$tmp/t.trace" --trace-all python3 thr.py
"$A" trace --csv t.trace >t.csv
t "threads: four threads' calls, a forked child's" python3 -c "
import csv
rows = [r for r in csv.DictReader(open('t.csv')) if r['role'] == 'db' and r['call'] == 'pwrite64']
assert len({r['tid'] for r in rows}) >= 5, {r['tid'] for r in rows}
assert len({r['pid'] for r in rows}) == 2
assert len(rows) >= 5 * 51
"
t "--trace-all: other files too" grep -q ',fsync,other,.*plain.txt' t.csv

# ---- damaged traces --------------------------------------------------------------
size=$(stat -c %s p.trace)
head -c $((size - 100)) p.trace >cut.trace
"$A" trace --json cut.trace >cut.json 2>cut.err
t "truncated: exit 1" [ $? -eq 1 ]
t "truncated: the byte named" grep -q 'damaged at byte [0-9]* (the file ends inside a chunk' cut.err
t "truncated: the valid part reported" jcheck cut.json \
	"d['events'] > 0 and d['damage']['first_byte'] < $size"
cp p.trace flip.trace
printf '\377' | dd of=flip.trace bs=1 seek=100 conv=notrunc status=none
"$A" trace flip.trace >flip.txt 2>flip.err
t "flipped byte: exit 1, checksum named at byte 0" \
	grep -q 'damaged at byte 0 (checksum mismatch)' flip.err
t "flipped byte: the later chunks reported" grep -q '^transactions: [1-9]' flip.txt
"$A" trace /nonexistent.trace 2>/dev/null
t "no such file: exit 1" [ $? -eq 1 ]
"$A" trace --bogus p.trace 2>/dev/null
t "bad option: exit 2" [ $? -eq 2 ]

echo "trace: $pass passed, $fail failed"
[ $fail -eq 0 ]
