#!/bin/bash
# hostile.sh BUILD - corrupt and hostile logs under real SQLite.
#
# A database whose log holds 60 committed transactions is damaged in the
# ways the issue lists: truncated, bit-flipped (in headers, block tables,
# payloads), zero-filled, from an older format version, and with a record
# claiming huge lengths -- in its first, a middle and its last record; and
# replaced by the log of another database, or moved away.  Under a 512 MiB address-space limit and a
# timeout, the sqlite3 shell under ALEX must then
#   - not crash or hang, and pass integrity_check;
#   - hold exactly what the same log cut short at the damage holds (every
#     valid committed record before it is kept);
#   - have said on stderr which log and which byte;
# `alex verify` must exit non-zero with the same offset (damage, not a
# clean cut), and `alex recover` must salvage the same rows into the
# database, set the log aside, and leave a file plain SQLite reads.
# An unusable header (older version) must be refused, the log untouched.
set -u
B=$(cd "${1:?usage: hostile.sh BUILD}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/alex-hostile.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
H="python3 $here/hostile.py"


alexsql() { # db sql...: under ALEX, bounded
	(ulimit -v 524288; LD_PRELOAD=$B/libalex.so ALEX_CHECKPOINT_ON_CLOSE=0 \
		timeout 30 sqlite3 "$@")
}
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# the pristine database: 20 transactions checkpointed into the file, then
# 60 autocommit transactions in the log
orig=$tmp/orig
mkdir -p "$orig"
build() { # dir first-id [more schema]
	{
		echo "create table t(id integer primary key, v text);${3:-}"
		for i in $(seq "$2" $(($2 + 19))); do echo "insert into t values($i, 'base $i');"; done
	} | LD_PRELOAD=$B/libalex.so sqlite3 "$1/db.db" && "$B/alex" checkpoint "$1/db.db" &&
	for i in $(seq "$2" $(($2 + 59))); do
		echo "insert into t values($((i + 1000)), printf('%0*d', $((i * 37 % 900)), $i));"
	done | LD_PRELOAD=$B/libalex.so ALEX_CHECKPOINT_ON_CLOSE=0 sqlite3 "$1/db.db"
}
build "$orig" 1 || { echo "hostile: cannot build the database"; exit 1; }
mapfile -t recs < <($H records "$orig/db.db-alex")
[ "${#recs[@]}" -ge 60 ] || { echo "hostile: only ${#recs[@]} records"; exit 1; }

# check_case NAME AT OP ARGS: hostile.py OP on a copy of the log; AT is the
# byte where the damage starts (what the same log cut short there must equal)
check_case() {
	local name=$1 at=$2 op=$3 d=$tmp/case
	shift 3
	rm -rf "$d" "$tmp/cut" && cp -r "$orig" "$d" && cp -r "$orig" "$tmp/cut"
	$H "$op" "$d/db.db-alex" "$@" || { bad "$name: surgery failed"; return; }
	truncate -s "$at" "$tmp/cut/db.db-alex"
	local want got err st
	want=$(alexsql "$tmp/cut/db.db" "pragma integrity_check" .dump 2>/dev/null)
	got=$(alexsql "$d/db.db" "pragma integrity_check" .dump 2>"$d/err")
	st=$?
	if [ $st -ge 124 ]; then
		bad "$name: sqlite3 under ALEX died or hung (status $st): $(head -c 200 "$d/err")"; return
	fi
	if [ "$got" != "$want" ] || [ "${got%%$'\n'*}" != ok ]; then
		bad "$name: got $(echo "$got" | wc -l) lines, want $(echo "$want" | wc -l) ($(head -c 200 "$d/err"))"; return
	fi
	if ! grep -q "db.db-alex: damaged.* record at byte $at" "$d/err"; then
		bad "$name: stderr does not name the log and byte $at: $(head -c 300 "$d/err")"; return
	fi
	if "$B/alex" verify "$d/db.db" >"$d/verify" 2>&1 || ! grep -q "damaged at byte $at" "$d/verify"; then
		bad "$name: alex verify: $(cat "$d/verify")"; return
	fi
	if ! "$B/alex" recover "$d/db.db" >"$d/recover" 2>&1 || [ -e "$d/db.db-alex" ] ||
		! ls "$d"/db.db-alex.recovered-* >/dev/null 2>&1; then
		bad "$name: alex recover: $(cat "$d/recover")"; return
	fi
	got=$(sqlite3 "$d/db.db" "pragma integrity_check" .dump 2>&1)
	if [ "$got" != "$want" ]; then
		bad "$name: after recover plain SQLite reads $(echo "$got" | wc -l) lines, want $(echo "$want" | wc -l): $(echo "$got" | head -2)"; return
	fi
	pass=$((pass + 1))
}

# a damaged record in the middle, in the last record, and in the first
for k in 0 30 $((${#recs[@]} - 1)); do
	read -r off len <<<"${recs[$k]}"
	check_case "bit flip in record $k's header" "$off" flip $((off + 20)) 3
	check_case "bit flip in record $k's block table" "$off" flip $((off + 115)) 0
	check_case "bit flip in record $k's payload" "$off" flip $((off + len - 200)) 6
	check_case "record $k claims huge lengths" "$off" huge "$off"
	check_case "log cut inside record $k" "$off" cut $((off + len / 2))
	# zeros over the last record are a shorter log, nothing to detect
	[ "$k" -lt $((${#recs[@]} - 1)) ] && check_case "zeros over record $k" "$off" zero "$off" 4096
done

# refused NAME DIR PATTERN: under ALEX the open fails (no crash, no hang)
# with a line matching PATTERN, the log is left as it was, and alex verify
# exits 1 with the same explanation
refused() {
	local sum out st
	sum=$(md5sum <"$2/db.db-alex")
	out=$(alexsql "$2/db.db" "select count(*) from t" 2>&1)
	st=$?
	if [ $st -eq 0 ] || [ $st -ge 124 ] || ! echo "$out" | grep -q "$3" ||
		[ "$(md5sum <"$2/db.db-alex")" != "$sum" ]; then
		bad "$1: status $st: $out"
	elif "$B/alex" verify "$2/db.db" >"$2/verify" 2>&1 ||
		! grep -q "${3#*\*}" "$2/verify"; then
		bad "$1: alex verify: $(cat "$2/verify")"
	else
		return 0
	fi
	return 1
}

# a log from another database: refused, log untouched, verify explains;
# recover sets it aside and the file holds its own last checkpoint (20 rows)
other=$tmp/other
mkdir -p "$other"
# (a database with a different history: ALEX tells logs apart by the
# database header they record, which two databases built by the very same
# statements share -- see docs/RELIABILITY.md)
build "$other" 5000 "create table u(x);" || { echo "hostile: cannot build the second database"; exit 1; }
d=$tmp/foreign && rm -rf "$d" && cp -r "$orig" "$d" && cp "$other/db.db-alex" "$d/db.db-alex"
if refused "log of another database" "$d" "db.db-alex.*another database"; then
	if ! "$B/alex" recover "$d/db.db" >"$d/recover" 2>&1 || [ -e "$d/db.db-alex" ] ||
		[ "$(sqlite3 "$d/db.db" "pragma integrity_check; select count(*) from t" | tr '\n' ' ')" != "ok 20 " ]; then
		bad "log of another database: alex recover: $(cat "$d/recover")"
	else
		pass=$((pass + 1))
	fi
fi

# the log moved away (or the database moved away from it) while it held
# 60 commits: refused under ALEX with a line naming the file and what to
# do, as SQLite without ALEX refuses it, and by alex stat; put back, every
# row is there; deleted, alex recover keeps the file's last checkpoint
# (20 rows) and leaves a plain database
d=$tmp/orphan && rm -rf "$d" && cp -r "$orig" "$d" && mv "$d/db.db-alex" "$d/away"
out=$(alexsql "$d/db.db" "select count(*) from t" 2>&1)
st=$?
if [ $st -eq 0 ] || [ $st -ge 124 ] || ! echo "$out" | grep -q "db.db: fenced by an ALEX log that is not beside it.*alex recover"; then
	bad "log moved away: status $st: $out"
elif ! sqlite3 "$d/db.db" "select count(*) from t" 2>&1 | grep -q "not a database"; then
	bad "log moved away: SQLite without ALEX reads the file"
elif "$B/alex" stat "$d/db.db" >"$d/stat" 2>&1 || ! grep -q "not beside it.*alex recover" "$d/stat"; then
	bad "log moved away: alex stat: $(cat "$d/stat")"
elif mv "$d/away" "$d/db.db-alex" && [ "$(alexsql "$d/db.db" "select count(*) from t" 2>&1)" != 80 ]; then
	bad "log put back: $(alexsql "$d/db.db" "select count(*) from t" 2>&1)"
elif rm "$d/db.db-alex" && ! "$B/alex" recover "$d/db.db" >"$d/recover" 2>&1 ||
	! grep -q "last checkpoint" "$d/recover" ||
	[ "$(sqlite3 "$d/db.db" "pragma integrity_check; select count(*) from t" | tr '\n' ' ')" != "ok 20 " ]; then
	bad "log deleted: alex recover: $(cat "$d/recover")"
elif [ "$(alexsql "$d/db.db" "select count(*) from t" 2>&1)" != 20 ]; then
	bad "after alex recover, under ALEX: $(alexsql "$d/db.db" "select count(*) from t" 2>&1)"
else
	pass=$((pass + 1))
fi

# a symbolic link to a database whose log holds 60 commits: the tool
# follows it, as SQLite does, to the log beside the target (review: alex
# recover through a link took the link's missing log for a log gone, took
# the target's fence off, and its commits were lost)
d=$tmp/link && rm -rf "$d" && mkdir -p "$d/other" && cp -r "$orig" "$d/real" &&
	ln -s ../real/db.db "$d/other/link.db"
if ! "$B/alex" stat "$d/other/link.db" >"$d/stat" 2>&1; then
	bad "a link: alex stat: $(cat "$d/stat")"
elif ! "$B/alex" inspect "$d/other/link.db" >"$d/inspect" 2>&1; then
	bad "a link: alex inspect: $(head -3 "$d/inspect")"
elif ! "$B/alex" recover "$d/other/link.db" >"$d/recover" 2>&1 ||
	[ "$(sqlite3 "$d/real/db.db" "pragma integrity_check; select count(*) from t" | tr '\n' ' ')" != "ok 80 " ]; then
	bad "a link: alex recover: $(cat "$d/recover")"
else
	pass=$((pass + 1))
fi

# a second name (hard link) of a database whose log holds 60 commits:
# alex recover by that name finds no log beside it and must not take the
# fence off -- the log beside the first name would stop counting (second
# review: 1 row of 3 left, no warning)
d=$tmp/hardlink && rm -rf "$d" && cp -r "$orig" "$d" && ln "$d/db.db" "$d/two.db"
if "$B/alex" recover "$d/two.db" >"$d/recover" 2>&1 || ! grep -q "hard links" "$d/recover"; then
	bad "a hard link: alex recover: $(cat "$d/recover")"
elif [ "$(alexsql "$d/db.db" "select count(*) from t" 2>&1)" != 80 ]; then
	bad "a hard link: after alex recover: $(alexsql "$d/db.db" "select count(*) from t" 2>&1)"
else
	pass=$((pass + 1))
fi

# a salvage syncs the database before it sets the log aside: its unmark is
# not synced otherwise, and a power cut could leave the mark with no log
# (second review)
if command -v strace >/dev/null; then
	d=$tmp/order && rm -rf "$d" && cp -r "$orig" "$d"
	strace -f -y -o "$d/tr" -e trace=pwrite64,fdatasync,rename,renameat,renameat2 \
		"$B/alex" recover "$d/db.db" >"$d/recover" 2>&1
	# of the database's writes and syncs, the last one before the rename
	last=$(awk '/db\.db>/ && /pwrite64\(/ { e = "write" } /db\.db>/ && /fdatasync\(/ { e = "sync" }
		/rename/ && /db\.db-alex"/ { print e; exit }' "$d/tr")
	if ! grep -q "salvaged" "$d/recover" || [ "$last" != sync ]; then
		bad "a salvage: the sync before the log is set aside: $(grep -v '^+++\|^---' "$d/tr" | tail -n 3 | tr '\n' ' ')"
	else
		pass=$((pass + 1))
	fi
fi

# a staging log (NORMAL mode) left beside a database whose log is gone: its
# commits name the missing log; alex recover sets it aside too, and the
# file holds its last checkpoint (second review: recover failed, no way out)
d=$tmp/stage && rm -rf "$d" && mkdir -p "$d" &&
	LD_PRELOAD=$B/libalex.so sqlite3 "$d/db.db" "create table t(x); insert into t values(1)" &&
	LD_PRELOAD=$B/libalex.so ALEX_SYNC=normal python3 -c '
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
for i in range(5): c.execute("insert into t values(?)", (i,))
os.kill(os.getpid(), 9)' "$d/db.db" 2>/dev/null
rm -f "$d/db.db-alex"
if [ ! -e "$d/db.db-alex-stage" ]; then
	bad "a staging log beside an orphan: none was left ($(ls "$d" | tr '\n' ' '))"
elif ! "$B/alex" recover "$d/db.db" >"$d/recover" 2>&1 || ! grep -q "set aside" "$d/recover" ||
	[ -e "$d/db.db-alex-stage" ] ||
	[ "$(sqlite3 "$d/db.db" "pragma integrity_check; select count(*) from t" | tr '\n' ' ')" != "ok 1 " ]; then
	bad "a staging log beside an orphan: alex recover: $(cat "$d/recover")"
else
	pass=$((pass + 1))
fi

# an older (or newer) format: refused, log untouched, verify explains
for v in 0 11; do # 5 is the encrypted format (its own test: a slot of 5 without the flag is damage)
	d=$tmp/ver && rm -rf "$d" && cp -r "$orig" "$d"
	$H version "$d/db.db-alex" $v
	refused "format version $v" "$d" "db.db-alex.*version" && pass=$((pass + 1))
done
echo "hostile: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
