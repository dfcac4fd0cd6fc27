#!/bin/bash
# readers.sh BUILD - a user who may read a database but not write it (its
# mode 0644, another user's) reads it under ALEX as under SQLite, while
# a writer keeps a log (staged or not) beside it and after the writer is
# killed: every read succeeds and is consistent, a write is refused as
# SQLite refuses it (SQLITE_READONLY), and the reader writes nothing.
# Before read-only engines the reader could not open the database at all
# while the log existed ("unable to open database file").  Needs root,
# the user nobody and setpriv; otherwise skipped (exit 77).
set -u
skip() { [ -n "${CHECK_SKIP_FILE:-}" ] && echo "$*" >"$CHECK_SKIP_FILE"; exit 77; }
B=$(cd "${1:?usage: readers.sh BUILD}" && pwd)
why=""
[ "$(id -u)" = 0 ] || why="not root"
id nobody >/dev/null 2>&1 || why="${why:+$why, }no user nobody"
command -v setpriv >/dev/null || why="${why:+$why, }setpriv not found"
[ -z "$why" ] || skip "$why"
tmp=$(mktemp -d /tmp/alex-readers.XXXXXX)
chmod 755 "$tmp"
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
# a copy nobody can load wherever the build lives
cp "$B/libalex.so" "$tmp/libalex.so" && chmod 644 "$tmp/libalex.so"
lib=$tmp/libalex.so
grp=$(id -gn nobody)
pass=0 fail=0
t() { local what=$1; shift; if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $what"; fi; }
as_nobody() { setpriv --reuid=nobody --regid="$grp" --clear-groups env LD_PRELOAD="$lib" "$@"; }
# SQLite's own reader waits out a writer's lock only with a busy timeout
read_nobody() { as_nobody sqlite3 -cmd ".timeout 10000" "$@"; }

# The writer: rows 1, 2, 3 ... one autocommit INSERT each, the count of
# acknowledged rows written to ACKED after each (whole: a rename); it
# holds the database open for SECONDS (and LINGER more, idle).
writer() { # DB ACKED SECONDS [env...]
	local db=$1 acked=$2 secs=$3
	shift 3
	# exec: $! of "writer ... &" is then the writer itself, for kill -9
	exec env "$@" LD_PRELOAD="$lib" python3 -c '
import os, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
c.execute("create table if not exists t(x integer primary key, v text)")
end = time.time() + float(sys.argv[3])
n = c.execute("select count(*) from t").fetchone()[0]
while time.time() < end:
    n += 1
    c.execute("insert into t values(?, ?)", (n, "row %d" % n))
    with open(sys.argv[2] + ".new", "w") as f:
        f.write("%d\n" % n)
    os.replace(sys.argv[2] + ".new", sys.argv[2])  # whole, even when killed
    time.sleep(0.002)
time.sleep(float(os.environ.get("LINGER", "0")))  # idle before the close
' "$db" "$acked" "$secs"
}

# every read: the rows are 1..n exactly (count, sum and max agree)
consistent() { # OUTPUT
	local n s m
	IFS='|' read -r n s m <<<"$1"
	[[ $n =~ ^[0-9]+$ ]] && [ "$s" = "$((n * (n + 1) / 2))" ] && [ "$m" = "$n" ]
}

for stage in 1 0; do
	d=$tmp/s$stage
	mkdir -p "$d" && chmod 755 "$d"
	db=$d/a.db
	sqlite3 "$db" "create table t(x integer primary key, v text)" && chmod 644 "$db"
	writer "$db" "$d/acked" 4 ALEX_SYNC=normal ALEX_STAGE=$stage &
	wpid=$!
	for _ in $(seq 50); do [ -s "$d/acked" ] && break; sleep 0.1; done
	t "stage=$stage: the writer keeps a log" [ -e "$db-alex" ]
	bad=0 last=0 reads=0
	for _ in $(seq 40); do
		out=$(read_nobody "$db" "select count(*), coalesce(sum(x), 0), coalesce(max(x), 0) from t" 2>&1)
		reads=$((reads + 1))
		if ! consistent "$out" || [ "${out%%|*}" -lt "$last" ]; then
			bad=$((bad + 1))
			echo "stage=$stage: read gave '$out' (last $last)"
		else
			last=${out%%|*}
		fi
	done
	t "stage=$stage: $reads reads as nobody beside a writer, each whole and newer ($bad bad)" [ "$bad" = 0 ]
	t "stage=$stage: they saw the writer's rows (last $last)" [ "$last" -gt 0 ]
	out=$(read_nobody "$db" "insert into t values(-1, 'x')" 2>&1)
	t "stage=$stage: a write is refused as SQLite refuses it ($out)" \
		[ "$(echo "$out" | grep -c 'readonly database')" = 1 ]
	wait "$wpid"
	t "stage=$stage: the writer's close left nothing beside the database" \
		[ ! -e "$db-alex" -a ! -e "$db-alex-stage" ]
	n=$(cat "$d/acked")
	out=$(read_nobody "$db" "select count(*), sum(x), max(x) from t" 2>&1)
	t "stage=$stage: after the writer, all $n rows ($out)" [ "$out" = "$n|$((n * (n + 1) / 2))|$n" ]

	# the writer killed: its log (and staging log) stay; the reader
	# reads every acknowledged row through them, and writes nothing
	rm -f "$d/acked"
	writer "$db" "$d/acked" 30 ALEX_SYNC=normal ALEX_STAGE=$stage &
	wpid=$!
	for _ in $(seq 50); do [ -s "$d/acked" ] && break; sleep 0.1; done
	sleep 1
	kill -9 "$wpid"
	wait "$wpid" 2>/dev/null
	n=$(cat "$d/acked")
	before=$(cd "$d" && ls -l --time-style=+%s.%N a.db* | md5sum)
	out=$(read_nobody "$db" "select count(*), sum(x), max(x) from t" 2>&1)
	t "stage=$stage: killed writer's log read by nobody: at least its $n acknowledged rows ($out)" \
		consistent "$out"
	t "stage=$stage: ... no fewer than acknowledged ($n)" [ "${out%%|*}" -ge "$n" ] 2>/dev/null
	t "stage=$stage: ... and the reader changed no file" \
		[ "$(cd "$d" && ls -l --time-style=+%s.%N a.db* | md5sum)" = "$before" ]
	out2=$(LD_PRELOAD=$lib sqlite3 "$db" "select count(*), sum(x), max(x) from t; pragma integrity_check" 2>&1)
	t "stage=$stage: the owner's next open agrees ($out2)" [ "$out2" = "$out"$'\n'"ok" ]
done

# A reader in a read transaction while the writer closes: the writer,
# with no other engine that could checkpoint after it, waits the reader
# out (ALEX_CLOSE_WAIT_MS, here above the reader's 1.2 s) and checkpoints,
# so that the file is a plain SQLite database again (before, it was left
# fenced: "file is not a database" to SQLite without ALEX).
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
# close_beside DIR [env...]: a writer (env) inserts for 0.5 s, idles, and
# closes at 1.5 s, while nobody holds a read transaction from about 1 s to
# 2.2 s (its stderr in DIR/reader.err); DIR/a.db, DIR/acked
close_beside() {
	local d=$1 wpid rpid
	shift
	mkdir -p "$d" && chmod 755 "$d"
	sqlite3 "$d/a.db" "create table t(x integer primary key, v text)" && chmod 644 "$d/a.db"
	writer "$d/a.db" "$d/acked" 0.5 LINGER=1 ALEX_SYNC=normal "$@" 2>"$d/writer.err" &
	wpid=$!
	for _ in $(seq 50); do [ -s "$d/acked" ] && break; sleep 0.1; done
	sleep 0.9
	as_nobody "$py" -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
c.execute("begin")
c.execute("select count(*) from t").fetchone()
time.sleep(1.2)
c.execute("commit")
' "$d/a.db" 2>"$d/reader.err" &
	rpid=$!
	wait "$wpid"
	wait "$rpid"
}
for stage in 1 0; do
	d=$tmp/c$stage
	close_beside "$d" ALEX_CLOSE_WAIT_MS=3000 ALEX_STAGE=$stage
	n=$(cat "$d/acked")
	t "stage=$stage: the reader said nothing ($(head -c 300 "$d/reader.err"))" [ ! -s "$d/reader.err" ]
	out=$(sqlite3 "$d/a.db" "select count(*) from t" 2>&1)
	t "stage=$stage: a writer closed beside a reader's transaction: plain SQLite reads all $n rows ($out)" \
		[ "$out" = "$n" ]
	# (an empty log may stay beside it: the reader, still open at the
	# checkpoint, kept it from removal; a log holding pages would have
	# left the file fenced, which the read above rules out)
done

# ... and with the default wait (100 ms) a 1.2 s read transaction is not
# waited out: the close says so in one line, and the owner's next open
# finds every row (the file fenced until then, as after a crash)
d=$tmp/long
close_beside "$d"
n=$(cat "$d/acked")
t "a read transaction past the wait: the close says so ($(head -c 300 "$d/writer.err"))" \
	[ "$(grep -c 'closed with commits in its log while another process held the database' "$d/writer.err")" = 1 ]
out=$(LD_PRELOAD=$lib sqlite3 "$d/a.db" "select count(*) from t; pragma integrity_check" 2>&1)
t "... and the owner's next open has all $n rows ($out)" [ "$out" = "$n"$'\n'"ok" ]

# ... and the window behind the wait: the reader takes SHARED after the
# writer's last close looked for other processes' locks and before its
# EXCLUSIVE (ALEX_TEST_CLOSE_US holds the close in between).  The close
# must wait that lock out, as it would have had the reader held it at the
# look, then checkpoint: no warning, plain SQLite reads every row.  Without
# that the close gave up at once, left the file fenced and said so (the
# fresh-clone CI failure of df1e4ac's stop: rest.sh's racing processes).
d=$tmp/window; mkdir -p "$d"; chmod 755 "$d"
sqlite3 "$d/a.db" "create table t(x); insert into t values(0)"
chmod 644 "$d/a.db"
out=$(python3 - "$d/a.db" "$B/libalex-test.so" "$grp" "$lib" "$py" <<'PY' 2>&1
import os, subprocess, sys, time
db, testlib, grp, lib, py = sys.argv[1:6]
R = """
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
c.execute("select count(*) from t").fetchall()
print("ready", flush=True)
sys.stdin.readline()
c.execute("begin"); c.execute("select count(*) from t").fetchall()
time.sleep(0.6)
c.execute("commit")
print("released", flush=True)
sys.stdin.readline()
"""
W = """
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
c.execute("insert into t values(1)")
print("closing", flush=True)
c.close()
"""
r = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=" + grp, "--clear-groups",
                      "env", "LD_PRELOAD=" + lib, py, "-c", R, db],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
assert r.stdout.readline().strip() == "ready"
w = subprocess.Popen([sys.executable, "-c", W, db],
                     env=dict(os.environ, LD_PRELOAD=testlib, ALEX_TEST_CLOSE_US="500000",
                              ALEX_CLOSE_WAIT_MS="2000"),
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
assert w.stdout.readline().strip() == "closing"
time.sleep(0.2)            # the writer is past its look, in its pause (500 ms)
r.stdin.write("go\n"); r.stdin.flush()   # SHARED from about 200 to 800 ms
err = w.stderr.read()
w.wait()
assert r.stdout.readline().strip() == "released"
r.stdin.write("end\n"); r.stdin.flush(); r.wait()
print("warning" if "closed with commits" in err else "quiet", w.returncode, r.returncode)
PY
)
t "a reader's lock taken in the last close's window is waited out ($out)" [ "$out" = "quiet 0 0" ]
out=$(sqlite3 "$d/a.db" "select count(*) from t; pragma integrity_check" 2>&1)
t "... and plain SQLite reads every row ($out)" [ "$out" = "2"$'\n'"ok" ]

echo "readers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
