#!/bin/bash
# inspect.sh BUILD ALEX - `ALEX inspect [--json] DB` on logs made by the
# sqlite3 shell under BUILD/libalex.so: what it lists (records, commits,
# pages, live bytes), its JSON, a log in use (no lock taken, no byte
# changed), no log, a damaged log and bad arguments.
# ALEX is the alex tool, or any program that takes "inspect" as its first
# argument the same way.
set -u
# skip REASON: this test cannot run here (exit 77: skipped, never passed;
# the reason goes where tests/run-test asks for it)
skip() { [ -n "${CHECK_SKIP_FILE:-}" ] && echo "$*" >"$CHECK_SKIP_FILE"; exit 77; }
B=$(cd "${1:?usage: inspect.sh BUILD ALEX}" && pwd)
A=${2:?usage: inspect.sh BUILD ALEX}
case $A in /*) ;; *) A=$(cd "$(dirname "$A")" && pwd)/$(basename "$A") ;; esac
lib=$B/libalex.so
for tool in sqlite3 python3 sha256sum; do
	command -v $tool >/dev/null || { echo "inspect: skipped: $tool not found"; skip "$tool not found"; }
done
if [ ! -x "$A" ] || [ ! -f "$lib" ]; then echo "inspect: $A or $lib missing"; exit 1; fi
tmp=$(mktemp -d /tmp/alex-inspect.XXXXXX)
holder=
trap '[ -n "$holder" ] && kill "$holder" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0 fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL $*"; }
t() { local what=$1; shift; if "$@"; then ok; else no "$what"; fi; }
# the log stays at the last close, with the pages it holds
alex_sql() { ALEX_CHECKPOINT_ON_CLOSE=0 ALEX_KEEP_LOG=1 LD_PRELOAD=$lib sqlite3 "$@"; }
# jcheck FILE EXPR: a Python expression over the JSON object d
jcheck() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); assert ($2), d" "$1" 2>/dev/null; }

# 4 statements, each its own transaction: 4 commit records
alex_sql one.db 'create table t(x); insert into t values(1);
	insert into t values(2); insert into t values(3)'
t "a log is left to inspect" [ -s one.db-alex ]
"$A" inspect one.db >out 2>err
t "inspect: exit 0" [ $? -eq 0 ]
t "inspect: records and commits counted" grep -q '^records: 4, 4 commits$' out
t "inspect: header shown" grep -q '^header: format 10, epoch 1 .*FENCED' out
t "inspect: page 1 listed" grep -q '^pages in the log: 1[-,]' out
t "inspect: a checkpoint's work shown" grep -q '^checkpoint would write [1-9]' out
t "inspect: nothing on stderr" [ ! -s err ]
"$A" inspect --json one.db >one.json
t "--json: exit 0" [ $? -eq 0 ]
t "--json: valid JSON" python3 -m json.tool one.json >/dev/null
t "--json: records == commits made" jcheck one.json \
	"d['record_count'] == 4 and d['commits'] == 4 and len(d['records']) == 4"
t "--json: every record a committed commit" jcheck one.json \
	"all(r['kind'] == 'commit' and r['state'] == 'committed' for r in d['records'])"
t "--json: lsns follow each other" jcheck one.json \
	"[r['lsn'] for r in d['records']] == list(range(1, 5))"
t "--json: page 1 in the log" jcheck one.json \
	"any(p['file'] == 'db' and p['first_page'] == 1 for p in d['pages'])"
t "--json: live bytes" jcheck one.json \
	"0 < d['space']['live_bytes'] <= d['space']['record_bytes'] and
	 d['space']['live_bytes'] + d['space']['dead_bytes'] == d['space']['record_bytes']"
t "--json: not damaged, epoch live" jcheck one.json \
	"not d['end']['damaged'] and d['epoch_state'] == 'live' and d['header']['epoch'] == 1"
t "--json: small pages stored without their gap, a record in a block's sectors" jcheck one.json \
	"all(r['gap_blocks'] + r['delta_blocks'] == r['blocks'] and r['record_bytes'] <= 4096 and
	     r['record_bytes'] % 512 == 0 for r in d['records']) and
	 all(p['codec'] in ('gap', 'delta') and p['stored'] < 4096 for p in d['pages'])"
t "--json: checkpoint of the database file" jcheck one.json \
	"d['checkpoint']['blocks'] > 0 and d['checkpoint']['files'][0]['path'] == 'one.db'"

# a transaction larger than the engine's memory: spill records, then its commit
ALEX_MEMORY_KB=128 alex_sql spill.db "create table t(x); begin;
	with recursive c(i) as (select 1 union all select i + 1 from c where i < 3000)
	insert into t select randomblob(200) from c; commit"
"$A" inspect --json spill.db >spill.json
t "spills: exit 0" [ $? -eq 0 ]
t "spills: listed, and counted with their commit" jcheck spill.json \
	"d['commits'] == 2 and d['record_count'] > 2 and
	 any(r['kind'] == 'spill' and r['state'] == 'committed' for r in d['records'])"

# a log in use: another process has the database open under ALEX, in a
# write transaction (SQLite's RESERVED lock, the log's shared lock)
ALEX_CHECKPOINT_ON_CLOSE=0 LD_PRELOAD=$lib python3 -c "
import sqlite3, time
c = sqlite3.connect('busy.db', isolation_level=None)
c.execute('create table t(x)')
for i in range(5):
    c.execute('insert into t values(?)', (i,))
c.execute('begin immediate')
c.execute('insert into t values(99)')
open('ready', 'w').close()
time.sleep(60)" &
holder=$!
for _ in $(seq 100); do [ -e ready ] && break; sleep 0.1; done
t "the holder is ready" [ -e ready ]
sha256sum busy.db busy.db-alex >sums
"$A" inspect busy.db >busy.txt 2>&1
t "in use: exit 0" [ $? -eq 0 ]
"$A" inspect --json busy.db >busy.json
t "in use: said so, 6 commits" jcheck busy.json \
	"d['in_use'] and d['commits'] == 6 and not d['end']['damaged']"
t "in use: the log and the database unchanged" sha256sum --quiet -c sums
if command -v strace >/dev/null && strace -o /dev/null true 2>/dev/null; then
	strace -f -o trace -e trace=pwrite64,write,fsync,fdatasync,ftruncate,flock,fcntl,rename,unlink \
		"$A" inspect busy.db >/dev/null
	t "in use: no write, sync or lock taken" \
		bash -c '! grep -E "pwrite|fsync|ftruncate|flock|SETLK|rename|unlink|write\(([03-9]|[0-9]{2,})," trace'
fi
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
holder=

# even with libalex.so preloaded into inspect itself (an LD_PRELOAD left in
# the environment), nothing is opened through it: no engine, no checkpoint
cp one.db pre.db && cp one.db-alex pre.db-alex
sha256sum pre.db pre.db-alex >sums
LD_PRELOAD=$lib "$A" inspect pre.db >out 2>&1
t "under LD_PRELOAD: exit 0" [ $? -eq 0 ]
t "under LD_PRELOAD: the log read" grep -q '^records: 4, 4 commits$' out
t "under LD_PRELOAD: the log and the database unchanged" sha256sum --quiet -c sums

# no log: the database holds everything
sqlite3 plain.db 'create table t(x); insert into t values(1)'
"$A" inspect plain.db >out 2>&1
t "no log: exit 0" [ $? -eq 0 ]
t "no log: said so" [ "$(cat out)" = "plain.db-alex: no log (the database holds everything)" ]
"$A" inspect --json plain.db >out
t "no log: --json" jcheck out "d['log_present'] is False and d['fenced_without_log'] is False"

# no log, and the file fenced: its log moved away; exit 1, said so
cp one.db moved.db
"$A" inspect moved.db >out 2>&1
t "fenced, no log: exit 1" [ $? -eq 1 ]
t "fenced, no log: said so" grep -q '^moved.db-alex: no log, and moved.db carries ALEX.s fence: .*alex recover moved.db)$' out
"$A" inspect --json moved.db >out
t "fenced, no log: --json" jcheck out "d['log_present'] is False and d['fenced_without_log'] is True"

# no log, an encrypted file: its mark is ciphertext, and inspect says the
# key tells (second review: "the database holds everything", exit 0)
sqlite3 enc.db 'create table t(x); insert into t values(1)'
head -c 64 /dev/urandom >enc.key && chmod 600 enc.key
"$A" encrypt --key-file=enc.key enc.db >/dev/null 2>&1
"$A" inspect enc.db >out 2>&1
t "encrypted, no log: exit 0" [ $? -eq 0 ]
t "encrypted, no log: the key tells" grep -q "^enc.db-alex: no log; enc.db is encrypted, .*ALEX_KEY_FILE=KEY alex stat enc.db$" out
"$A" inspect --json enc.db >out
t "encrypted, no log: --json" jcheck out "d['log_present'] is False and d['fenced_without_log'] is None"

# a flipped byte in the stored bytes of the last record: the records before
# it listed, the damage named, exit 1
cp one.db bad.db && cp one.db-alex bad.db-alex
python3 -c "
import json, sys
d = json.load(open('one.json'))
last = d['records'][-1]['offset']
at = next(p['offset'] for p in d['pages'] if p['record'] == last)
with open('bad.db-alex', 'r+b') as f:
    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 0xff]))
print(last)" >last
"$A" inspect bad.db >out 2>&1
t "damaged: exit 1" [ $? -eq 1 ]
t "damaged: named, at the last record" grep -q "^DAMAGED at byte $(cat last): block checksum mismatch" out
t "damaged: earlier records listed" [ "$(grep -c '^  [0-9]\+ .* commit .* committed' out)" = 3 ]
"$A" inspect --json bad.db >bad.json
t "damaged: --json exit 1" [ $? -eq 1 ]
t "damaged: --json valid, 3 records, damage at the last" jcheck bad.json \
	"d['record_count'] == 3 and d['end']['damaged'] and d['end']['offset'] == $(cat last)"

# bad arguments: one line on stderr, exit 2
for args in "" "--nope one.db" "one.db two.db" "missing.db" "one.db-alex"; do
	# shellcheck disable=SC2086
	"$A" inspect $args >out 2>err
	rc=$?
	t "bad argument '$args': exit 2" [ $rc -eq 2 ]
	t "bad argument '$args': one line" [ "$(wc -l <err)" = 1 ] && [ ! -s out ]
done

echo "inspect: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
