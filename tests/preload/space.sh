#!/bin/bash
# space.sh BUILD - ALEX on a nearly full disk, for real, on size-limited
# tmpfs mounts (root only; without root the test is skipped, exit 77):
#  ratio   on a 3 MiB file system plain SQLite and ALEX each insert 900-byte
#          rows until SQLITE_FULL; ALEX must store at least 0.9x the rows
#          (the log is checkpointed before it crowds the disk, and gives its
#          preallocated space back)
#  after   then, like plain SQLite: every row readable, integrity ok, a
#          delete answered as plain SQLite answers it, and after the last
#          close a plain database with nothing beside it
#  filler  a 4 MiB file system with a filler file: SQLITE_FULL, every
#          committed row readable; the filler deleted, writes go on; the
#          file system grown, plain SQLite reads it all after the last close
set -u
# skip REASON: this test cannot run here (exit 77: skipped, never passed;
# the reason goes where tests/run-test asks for it)
skip() { [ -n "${CHECK_SKIP_FILE:-}" ] && echo "$*" >"$CHECK_SKIP_FILE"; exit 77; }
B=$(cd "${1:?usage: space.sh BUILD}" && pwd)
pass=0 fail=0 skip=0
root=$(mktemp -d /tmp/alex-space.XXXXXX)
trap 'umount "$root"/m* 2>/dev/null; rm -rf "$root"' EXIT
probe=$root/probe
mkdir -p "$probe"
if ! mount -t tmpfs -o size=1m tmpfs "$probe" 2>/dev/null; then
	echo "space: not run (mounting a tmpfs needs root): 0 passed, 0 failed, 9 skipped"
	skip "mounting a tmpfs needs root"
fi
umount "$probe"
t() { if eval "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $1 ($3)"; fi; }

fill() { # MOUNT -> "inserted count integrity first-error delete-result count-after"
	python3 - "$1" <<'PY'
import os, sqlite3, sys
d = sys.argv[1]
c = sqlite3.connect(d + "/s.db", isolation_level=None)
c.execute("create table t(id integer primary key, b blob)")
n, err = 0, "none"
while n < 100000:
    try:
        c.execute("insert into t(b) values(?)", (os.urandom(900),))
        n += 1
    except sqlite3.Error as e:
        err = getattr(e, "sqlite_errorname", str(e))
        break
cnt = c.execute("select count(*) from t").fetchone()[0]
ok = c.execute("pragma integrity_check").fetchone()[0]
try:
    c.execute("delete from t where id % 2 = 0")
    dele = "deleted"
except sqlite3.Error as e:
    dele = getattr(e, "sqlite_errorname", str(e))
after = c.execute("select count(*) from t").fetchone()[0]
c.close()
print(n, cnt, ok, err, dele, after)
PY
}

declare -A res
for mode in plain alex; do
	m=$root/m$mode
	mkdir -p "$m"
	mount -t tmpfs -o size=3m tmpfs "$m"
	if [ $mode = alex ]; then
		res[$mode]=$(LD_PRELOAD=$B/libalex.so fill "$m" 2>"$root/err.$mode")
	else
		res[$mode]=$(fill "$m" 2>"$root/err.$mode")
	fi
	res[$mode.files]=$(ls -A "$m" | tr '\n' ' ')
	res[$mode.plain]=$(sqlite3 "$m/s.db" "select count(*) from t; pragma integrity_check" 2>&1 | tr '\n' ' ')
	umount "$m"
done
read -r pn pc pok perr pdel pafter <<<"${res[plain]}"
read -r an ac aok aerr adel aafter <<<"${res[alex]}"
echo "space: 3 MiB: plain SQLite stored $pn rows, ALEX $an"
t "ratio: ALEX stores at least 0.9x the rows plain SQLite stores" '[ $((an * 10)) -ge $((pn * 9)) ]' "plain ${res[plain]} | alex ${res[alex]}"
t "after: SQLITE_FULL as plain SQLite reports it" '[ "$aerr" = "$perr" ] && [ "$aerr" = SQLITE_FULL ]' "$aerr vs $perr"
t "after: every row readable, integrity ok" '[ "$ac" = "$an" ] && [ "$aok" = ok ]' "${res[alex]}"
t "after: a delete answered as plain SQLite answers it" '[ "$adel" = "$pdel" ]' "$adel vs $pdel"
t "after: the reads still work after it" '[ "$aafter" -gt 0 ]' "$aafter"
t "after: nothing beside the database after the last close" '[ "${res[alex.files]}" = "s.db " ]' "${res[alex.files]}"
t "after: plain SQLite reads it all" '[ "${res[alex.plain]}" = "$aafter ok " ]' "${res[alex.plain]} $(cat "$root/err.alex")"

# a filler file takes the space; deleting it gives the space back
m=$root/mfill
mkdir -p "$m"
mount -t tmpfs -o size=4m tmpfs "$m"
dd if=/dev/zero of="$m/filler" bs=1M count=2 2>/dev/null
out=$(LD_PRELOAD=$B/libalex.so python3 - "$m" <<'PY'
import os, sqlite3, sys
d = sys.argv[1]
c = sqlite3.connect(d + "/full.db", isolation_level=None)
c.execute("create table t(id integer primary key, b blob)")
acked, errs, i = 0, [], 0
while len(errs) < 2 and i < 10000:
    try:
        c.execute("insert into t values(?, ?)", (i, os.urandom(20000)))
        acked = i = i + 1
    except sqlite3.Error as e:
        errs.append(str(e))
        if len(errs) == 1:
            first_full = acked
            os.unlink(d + "/filler")   # space comes back
n = c.execute("select count(*) from t").fetchone()[0]
ok = c.execute("pragma integrity_check").fetchone()[0]
print(first_full, acked, n, ok, "|".join(sorted(set(errs))))
c.close()
PY
)
read -r first acked rows ok errs <<<"$out"
t "filler: SQLite reports the full disk as SQLITE_FULL" '[ "$errs" = "database or disk is full" ]' "$out"
t "filler: every acknowledged row is readable, integrity ok" '[ "$rows" = "$acked" ] && [ "$ok" = ok ]' "$out"
t "filler: after space came back, writes went on" '[ "${acked:-0}" -gt "${first:-0}" ]' "$out"
mount -o remount,size=64m "$m"
LD_PRELOAD=$B/libalex.so sqlite3 "$m/full.db" "select count(*) from t" >/dev/null
t "filler: plain SQLite after the last close" \
	'[ "$(sqlite3 "$m/full.db" "select count(*) from t; pragma integrity_check" | tr "\n" " ")" = "$acked ok " ]' "$out"
umount "$m"
echo "space: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
