#!/bin/bash
# full.sh BUILD - a full disk under ALEX, for real: a 4 MiB tmpfs, a filler
# file, a writer that inserts until SQLite reports SQLITE_FULL.  The program
# must keep running, see "database or disk is full", read every row it had
# committed; after the filler is deleted it must write again; and after the
# file system grows, the close-time checkpoint and plain SQLite must agree.
# Needs root (mount); without it, says so and counts nothing.
set -u
B=$(cd "${1:?usage: full.sh BUILD}" && pwd)
mnt=$(mktemp -d /tmp/alex-full.XXXXXX)
if ! mount -t tmpfs -o size=4m tmpfs "$mnt" 2>/dev/null; then
	rmdir "$mnt"
	echo "full: not run (mounting a tmpfs needs root): 0 passed, 0 failed, 1 skipped"
	exit 0
fi
trap 'umount "$mnt"; rmdir "$mnt"' EXIT
dd if=/dev/zero of="$mnt/filler" bs=1M count=2 2>/dev/null
out=$(LD_PRELOAD=$B/libalex.so python3 - "$mnt" <<'PY'
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
pass=0 fail=0
t() { if eval "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $1 ($out)"; fi; }
t "SQLite reports the full disk as SQLITE_FULL" '[ "$errs" = "database or disk is full" ]'
t "every acknowledged row is readable, integrity ok" '[ "$rows" = "$acked" ] && [ "$ok" = ok ]'
t "after space came back, writes went on" '[ "${acked:-0}" -gt "${first:-0}" ]'
mount -o remount,size=64m "$mnt"
LD_PRELOAD=$B/libalex.so sqlite3 "$mnt/full.db" "select count(*) from t" >/dev/null
t "plain SQLite after the close-time checkpoint" \
	'[ "$(sqlite3 "$mnt/full.db" "select count(*) from t; pragma integrity_check" | tr "\n" " ")" = "$acked ok " ]'
echo "full: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
