#!/bin/bash
# encrypt.sh BUILD - ALEX_KEY_FILE with real clients (the sqlite3 shell,
# Python): the same SQL gives the same .dump as plain SQLite; neither the
# database file nor the log holds any of the inserted text; SQLite without
# ALEX, ALEX without the key and ALEX with another key are refused, each
# with its line; bad key files stop every database from opening; WAL mode
# is declined and the database stays usable; a writer killed with SIGKILL
# loses no acknowledged row; alex decrypt gives back the same database.
set -u
skip() { [ -n "${CHECK_SKIP_FILE:-}" ] && echo "$*" >"$CHECK_SKIP_FILE"; exit 77; }
B=$(cd "${1:?usage: encrypt.sh BUILD}" && pwd)
L=$B/libalex.so
tmp=$(mktemp -d /tmp/alex-enc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0 fail=0
t() { local what=$1; shift; if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $what"; fi; }
ax() { env LD_PRELOAD="$L" ALEX_KEY_FILE="$tmp/k" "$@"; }
secret=plaintext-marker-8e1f

head -c 64 /dev/urandom >k && chmod 600 k
head -c 64 /dev/urandom >k2 && chmod 600 k2
cat >work.sql <<EOF
create table t(id integer primary key, s text, b blob);
create index ts on t(s);
with recursive c(i) as (select 1 union all select i + 1 from c where i < 2000)
insert into t(s, b) select '$secret row ' || i, zeroblob(i % 300) from c;
update t set s = s || ' updated' where id % 7 = 0;
delete from t where id % 11 = 0;
begin; insert into t(s) values('$secret in a transaction'); commit;
begin; insert into t(s) values('rolled back'); rollback;
EOF

# the differential: plain SQLite and ALEX with a key, same SQL, same dump
sqlite3 plain.db <work.sql && sqlite3 plain.db .dump >plain.dump
ax sqlite3 e.db <work.sql 2>err
rc=$?
grep -q 'libcrypto.* cannot be loaded' err && skip "$(cat err)"
t "the shell with a key ($(cat err))" [ $rc -eq 0 ]
ax sqlite3 e.db .dump >e.dump 2>err
t "the same dump as plain SQLite" cmp -s plain.dump e.dump
t "nothing beside the database at rest" [ "$(ls e.db* | tr '\n' ' ')" = "e.db " ]
t "the database file holds none of the text" [ "$(grep -c "$secret" e.db)" = 0 ]

# the log holds none of it either, while it holds the commits
want=$(ax sqlite3 e.db "select count(*) from t where id < 50")
ax env ALEX_KEEP_LOG=1 ALEX_CHECKPOINT_ON_CLOSE=0 sqlite3 e.db \
	"insert into t(s) select '$secret logged ' || id from t where id < 50" 2>err
t "commits kept in the log ($(cat err))" [ -s e.db-alex ]
t "... and the log holds none of the text" [ "$(grep -c "$secret" e.db-alex)" = 0 ]
t "... nor does the database file" [ "$(grep -c "$secret" e.db)" = 0 ]
t "... nor any file beside it" [ "$(cat e.db* | grep -c "$secret")" = 0 ]
t "... and they read back" [ "$(ax sqlite3 e.db "select count(*) from t where s like '%logged%'")" = "$want" ]

# Python (its own linked SQLite)
ax python3 - <<'EOF' 2>err
import sqlite3
c = sqlite3.connect("e.db")
c.execute("insert into t(s) values (?)", ("plaintext-marker-8e1f from python",))
c.commit()
assert c.execute("select count(*) from t where s like '%python%'").fetchone()[0] == 1
assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
EOF
rc=$?
t "Python writes and reads ($(cat err))" [ $rc -eq 0 ]
t "... and nothing of it is in clear" [ "$(cat e.db* | grep -c "$secret")" = 0 ]

# refusals
sqlite3 e.db "select count(*) from t" >out 2>&1
t "SQLite without ALEX refuses it ($(cat out))" grep -q "file is not a database" out
LD_PRELOAD=$L sqlite3 e.db "select count(*) from t" >out 2>&1
t "ALEX without the key refuses it" [ "$(grep -c 'count' out)" = 0 ]
t "... saying so ($(head -1 out))" grep -q "encrypted, and no key was given" out
LD_PRELOAD=$L ALEX_KEY_FILE=$tmp/k2 sqlite3 e.db "select count(*) from t" >out 2>&1
t "another key is refused: \"wrong key for\" ($(head -1 out))" grep -q "wrong key for $tmp/e.db" out
t "... and shows no data" [ "$(grep -c "$secret" out)" = 0 ]
before=$(md5sum <plain.db)
ax sqlite3 plain.db "insert into t(s) values('$secret new'); select count(*) from t" >out 2>&1
t "a database in clear is not taken with a key ($(head -1 out))" grep -q "not encrypted" out
t "... nothing read from it" [ "$(grep -c '^[0-9]' out)" = 0 ]
t "... nothing written to it" [ "$(md5sum <plain.db)" = "$before" ]
t "... and no journal beside it" [ ! -e plain.db-journal ]
ax env ALEX_MODE=off sqlite3 e.db "select 1" >out 2>&1
t "a key with ALEX_MODE=off is refused ($(head -1 out))" grep -q "ALEX_KEY_FILE=.*ALEX_MODE=alex" out
# ... and refused it is: no database made in clear (the first version
# printed the refusal and let SQLite write off.db in clear)
for m in off trace; do
	ax env ALEX_MODE=$m sqlite3 off.db "create table t(s); insert into t values('$secret off')" >out 2>&1
	rc=$?
	t "... ALEX_MODE=$m with a key makes no database (status $rc)" [ $rc -ne 0 ] && [ ! -e off.db ]
	rm -f off.db*
done

# a journal on disk beside an encrypted database is never written: a hot
# one (its first byte not zero) stays, and the database with it as it was
ax sqlite3 j.db "create table t(s); insert into t values('$secret j1')"
{ printf '\001'; head -c 511 /dev/zero; } >j.db-journal
ax sqlite3 j.db "pragma journal_mode=persist; update t set s = '$secret j2'" >out 2>&1
t "a journal on disk is not written ($(tail -1 out))" grep -q "journal on disk beside an encrypted database" out
t "... and holds none of the text" [ "$(grep -c "$secret" j.db-journal)" = 0 ]
rm -f j.db-journal
t "... the database as it was" [ "$(ax sqlite3 j.db 'select s from t' 2>&1)" = "$secret j1" ]
# a cold one (PERSIST's zeroed header) is removed as SQLite begins to write,
# and the journal kept in memory: the update goes through, encrypted
head -c 512 /dev/zero >j.db-journal
ax sqlite3 j.db "pragma journal_mode=persist; update t set s = '$secret j2'" >out 2>&1
t "a cold journal on disk is removed ($(tail -1 out))" [ "$(cat out)" = persist ] && [ ! -e j.db-journal ]
t "... the update made" [ "$(ax sqlite3 j.db 'select s from t' 2>&1)" = "$secret j2" ]
t "... and nothing in clear" [ "$(cat j.db* | grep -c "$secret")" = 0 ]
for bad in mode644 short missing; do
	case $bad in
	mode644) cp k kb && chmod 644 kb ;;
	short) head -c 63 k >kb && chmod 600 kb ;;
	missing) rm -f kb ;;
	esac
	LD_PRELOAD=$L ALEX_KEY_FILE=$tmp/kb sqlite3 e.db "select count(*) from t" >out 2>&1
	t "key file $bad: refused ($(head -1 out))" grep -q "ALEX_KEY_FILE=$tmp/kb: .*database files will not be opened" out
	t "key file $bad: no data" [ "$(grep -c '^[0-9]' out)" = 0 ]
done
t "no key byte in any message" [ "$(grep -c "$(xxd -p -c 64 k | cut -c1-16)" out)" = 0 ]

# WAL mode is declined; the database stays in rollback mode and usable
ax sqlite3 e.db "pragma journal_mode=wal" >out 2>&1
t "WAL mode declined ($(tail -1 out))" grep -q "WAL mode is not available with encryption" out
t "... the database stays in delete mode" [ "$(ax sqlite3 e.db 'pragma journal_mode' 2>&1)" = delete ]
t "... and usable" [ "$(ax sqlite3 e.db "insert into t(s) values('after wal'); pragma integrity_check" 2>&1)" = ok ]
t "... no -wal file" [ ! -e e.db-wal ]
# the connection that asked for WAL goes on writing (its cached page 1 said
# WAL: the stored change counter makes SQLite drop it) and ends in delete
out=$(ax sqlite3 e.db "pragma journal_mode=wal; insert into t(s) values('same connection');
	begin; insert into t(s) values('same, in a transaction'); commit;
	select count(*) from t where s like 'same%'; pragma journal_mode" 2>&1 | grep -v '^libalex:' | tr '\n' ' ')
t "... the connection that asked goes on writing ($out)" [ "$out" = "wal 2 delete " ]
out=$(ax python3 -c 'import sqlite3, sys
a = sqlite3.connect(sys.argv[1], isolation_level=None)
b = sqlite3.connect(sys.argv[1], isolation_level=None)
a.execute("pragma journal_mode=wal")
b.execute("insert into t(s) values(?)", ("py other",))
a.execute("insert into t(s) values(?)", ("py asking",))
print(a.execute("select count(*) from t where s like ?", ("py %",)).fetchone()[0],
      b.execute("pragma journal_mode").fetchone()[0])' e.db 2>&1 | tail -n 1)
t "... two Python connections, one asking for WAL ($out)" [ "$out" = "2 delete" ]
t "... integrity_check" [ "$(ax sqlite3 e.db 'pragma integrity_check' 2>&1)" = ok ]

# a writer killed with SIGKILL loses no acknowledged row
ax sqlite3 k.db "create table t(id integer primary key, s text)"
( for i in $(seq 1 400); do echo "insert into t(s) values('$secret $i');"; echo "select 'acked $i';"; done ) |
	ax sqlite3 k.db >acked 2>/dev/null &
sleep 0.4
pkill -9 -f "sqlite3 k.db" 2>/dev/null
wait
n=$(grep -c acked acked)
got=$(ax sqlite3 k.db "select count(*) from t" 2>&1)
t "after SIGKILL: every acknowledged row ($n) is there ($got)" [ "$got" -ge "$n" ]
t "... integrity ok" [ "$(ax sqlite3 k.db 'pragma integrity_check' 2>&1)" = ok ]
t "... nothing in clear" [ "$(cat k.db* | grep -c "$secret")" = 0 ]

# the alex tool with the key: a log that holds commits checkpointed
ax env ALEX_KEEP_LOG=1 ALEX_CHECKPOINT_ON_CLOSE=0 sqlite3 e.db "insert into t(s) values('$secret tool')"
"$B/alex" inspect e.db >out 2>&1
t "alex inspect says an encrypted log needs the key ($(head -1 out))" grep -q "an encrypted log" out
"$B/alex" checkpoint e.db >out 2>&1
rc=$?
t "alex checkpoint without the key refused ($(head -1 out))" [ $rc -ne 0 ]
ALEX_KEY_FILE=$tmp/k "$B/alex" checkpoint e.db >out 2>&1
rc=$?
t "alex checkpoint with ALEX_KEY_FILE ($(head -1 out))" [ $rc -eq 0 ]
t "... the log gone" [ ! -e e.db-alex ]
t "... the row kept" [ "$(ax sqlite3 e.db "select count(*) from t where s like '%tool'")" = 1 ]

# alex decrypt gives back the database SQLite reads
ax sqlite3 e.db .dump >before.dump 2>/dev/null
"$B/alex" decrypt --key-file="$tmp/k" e.db >out 2>&1
rc=$?
t "alex decrypt ($(cat out))" [ $rc -eq 0 ]
sqlite3 e.db .dump >after.dump
t "... plain SQLite reads the same dump" cmp -s before.dump after.dump

# SQLite's temporary files (a temp table, a sorter's spills, VACUUM's copy,
# with a small cache so that they reach their files): every byte the
# process writes anywhere -- pwrite, pwritev, write to any file but the
# terminal -- is seen by strace, and none holds the rows' text.  Without
# the key the same run writes it (the check can see it).
if command -v strace >/dev/null; then
	cat >tmp.sql <<'EOF2'
pragma temp_store=file;
pragma cache_size=50;
create table t(id integer primary key, s text);
with recursive c(i) as (select 1 union all select i + 1 from c where i < 30000)
insert into t(s) select 'tmpleak-7c2e row ' || i || ' ' || hex(randomblob(30)) from c;
create temp table tt as select * from t where id % 2 = 0;
select count(*) from tt;
create index ts on t(s);
select count(*) from (select s from t order by s desc);
vacuum;
pragma integrity_check;
EOF2
	leaks() { grep 'tmpleak-7c2e' "$1" | grep -vc '^[0-9]* write([12],'; }
	out=$(strace -f -qq -e trace=pwrite64,pwritev,pwritev2,write -s 1000000 -o tmp.trace \
		env LD_PRELOAD="$L" ALEX_KEY_FILE="$tmp/k" ALEX_STATS="$tmp/tmp.json" sqlite3 tmp.db <tmp.sql 2>&1 | tr '\n' ' ')
	t "temporary files: the workload ($out)" [ "$out" = "15000 30000 ok " ]
	n=$(grep -o '"temp_files": [0-9]*' tmp.json | grep -o '[0-9]*$')
	t "temporary files: SQLite made some, encrypted ($n)" [ "${n:-0}" -ge 2 ]
	n=$(leaks tmp.trace)
	t "temporary files: no write holds the text ($n)" [ "$n" = 0 ]
	rm -f tmp.db* tmp.trace
	strace -f -qq -e trace=pwrite64,pwritev,pwritev2,write -s 1000000 -o tmp.trace \
		env LD_PRELOAD="$L" sqlite3 tmp.db <tmp.sql >/dev/null 2>&1
	n=$(leaks tmp.trace)
	t "temporary files: without a key the text is written ($n writes)" [ "$n" -gt 0 ]
	rm -f tmp.db* tmp.trace
	# ALEX_MATCH='*' names SQLite's temporary files too: still temporary
	# files, encrypted, never databases with logs (the first version served
	# them as databases: "database disk image is malformed")
	mkdir -p tmpd
	out=$(ALEX_MATCH='*' SQLITE_TMPDIR=$tmp/tmpd ax env ALEX_STATS="$tmp/tmp.json" sqlite3 tmp.db \
		"pragma temp_store=file; pragma cache_size=10; create table t(a);
		insert into t select 'S' || value from generate_series(1, 100000);
		select count(*) from (select a from t order by a desc)" 2>&1)
	t "temporary files under ALEX_MATCH='*' ($out)" [ "$out" = 100000 ]
	n=$(grep -o '"temp_files": [0-9]*' tmp.json | grep -o '[0-9]*$')
	t "... encrypted ($n), nothing left in the directory ($(ls tmpd))" \
		[ "${n:-0}" -ge 1 ] && [ -z "$(ls tmpd)" ]
	# with a key that is refused, a temporary file is refused too
	out=$(ax env ALEX_MODE=off sqlite3 :memory: "pragma temp_store=file; pragma cache_size=10;
		create table t(a); insert into t select 'S' || value from generate_series(1, 100000);
		select count(*) from (select a from t order by a desc)" 2>&1)
	t "... refused with a refused key ($(echo "$out" | tail -n 1))" \
		grep -q "unable to open database file" <<<"$out"
	rm -f tmp.db*
fi

echo "encrypt: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
