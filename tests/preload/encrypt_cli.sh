#!/bin/bash
# encrypt_cli.sh BUILD - alex encrypt, rekey and decrypt on a database the
# sqlite3 shell made: the file holds none of its text while encrypted and
# SQLite without the key refuses it; a wrong key, a second encryption, a
# key file others can read, a database in use (a sqlite3 process in a
# transaction) and one with a log or journal beside it are refused, each
# with one line, the file unchanged; at the end the dump is the original's.
set -u
# skip REASON: this test cannot run here (exit 77: skipped, never passed;
# the reason goes where tests/run-test asks for it)
skip() { [ -n "${CHECK_SKIP_FILE:-}" ] && echo "$*" >"$CHECK_SKIP_FILE"; exit 77; }
B=$(cd "${1:?usage: encrypt_cli.sh BUILD}" && pwd)
tmp=$(mktemp -d /tmp/alex-encrypt.XXXXXX)
holder=
trap '[ -n "$holder" ] && kill "$holder" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
alex=$B/alex
pass=0 fail=0
t() { local what=$1; shift; if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $what"; fi; }
sum() { md5sum <"$1"; }

head -c 64 /dev/urandom >k1 && chmod 600 k1
head -c 64 /dev/urandom >k2 && chmod 600 k2
# several pages of rows, each with the marker
sqlite3 d.db "create table t(id integer primary key, s text);
	with recursive c(i) as (select 1 union all select i + 1 from c where i < 400)
	insert into t(s) select 'plaintext-marker-1234 row ' || i || ' ' || hex(randomblob(40)) from c;
	create index ts on t(s)"
chmod 640 d.db
sqlite3 d.db .dump >orig.dump
t "the database holds the marker in clear" [ "$(grep -c plaintext-marker d.db)" -gt 0 ]

# encrypt
"$alex" encrypt --key-file=k1 d.db >out 2>err
rc=$?
grep -q 'libcrypto.* cannot be loaded' err && skip "$(cat err)"
t "encrypt succeeds ($(cat err))" [ $rc -eq 0 ]
t "... with one line" [ "$(cat out)" = "d.db: encrypted (AES-256-XTS)" ]
t "... no text of it left in the file" [ "$(grep -c plaintext-marker d.db)" = 0 ]
t "... nothing left beside it" [ ! -e d.db-alex-convert ]
t "... its mode kept" [ "$(stat -c %a d.db)" = 640 ]
sqlite3 d.db 'select count(*) from t' >out 2>&1
t "SQLite without the key refuses it" [ $? -ne 0 ]
t "... as not a database ($(cat out))" grep -q "file is not a database" out

# refusals: each one line on stderr, exit 1, the file unchanged
before=$(sum d.db)
refused() { # WHAT EXPECT COMMAND...: refused with EXPECT, d.db unchanged
	local what=$1 expect=$2
	shift 2
	"$@" >out 2>err
	local rc=$?
	t "$what: exit 1 ($rc)" [ $rc -eq 1 ]
	t "$what: one line ($(cat err))" [ "$(wc -l <err)" = 1 ]
	t "$what: says \"$expect\"" grep -q -- "$expect" err
	t "$what: the file unchanged" [ "$(sum d.db)" = "$before" ]
	t "$what: nothing left beside it" [ ! -e d.db-alex-convert ]
}
refused "decrypt with the wrong key" "d.db: encrypted with another key" \
	"$alex" decrypt --key-file=k2 d.db
refused "rekey with the wrong key" "d.db: encrypted with another key" \
	env ALEX_KEY_FILE=k2 "$alex" rekey d.db --new-key-file=k1
refused "encrypt twice" "d.db: encrypted already" "$alex" encrypt --key-file=k1 d.db
cp k1 k644 && chmod 644 k644
refused "a key file with mode 0644" "alex: k644: mode 0644 lets others read" \
	"$alex" decrypt --key-file=k644 d.db
refused "a missing key file" "alex: nokey: cannot open it" "$alex" decrypt --key-file=nokey d.db
touch d.db-alex
refused "a log beside it" "run alex checkpoint d.db first" "$alex" decrypt --key-file=k1 d.db
rm d.db-alex
printf '\331\325\005\371' >d.db-journal
refused "a hot journal beside it" "a hot journal" "$alex" decrypt --key-file=k1 d.db
: >d.db-journal # a cold one (TRUNCATE's) is no reason: the key check comes next
refused "a cold journal beside it" "d.db: encrypted with another key" "$alex" decrypt --key-file=k2 d.db
rm d.db-journal

# rekey (the old key from the environment), then decrypt with the new one
ALEX_KEY_FILE=k1 "$alex" rekey d.db --new-key-file=k2 >out 2>err
t "rekey succeeds ($(cat err))" [ $? -eq 0 ]
t "... with one line" [ "$(cat out)" = "d.db: encrypted with the new key (AES-256-XTS)" ]
t "... the text still hidden" [ "$(grep -c plaintext-marker d.db)" = 0 ]
before=$(sum d.db)
refused "the old key after the rekey" "encrypted with another key" \
	"$alex" decrypt --key-file=k1 d.db
# a new file a power cut left beside it goes first
head -c 5000 /dev/urandom >d.db-alex-convert
"$alex" decrypt --key-file=k2 d.db >out 2>err
t "decrypt with the new key succeeds ($(cat err))" [ $? -eq 0 ]
t "... with one line" [ "$(cat out)" = "d.db: decrypted" ]
t "... the stale new file gone" [ ! -e d.db-alex-convert ]
t "... its mode kept" [ "$(stat -c %a d.db)" = 640 ]
sqlite3 d.db .dump >after.dump
t "the dump is the original's" cmp -s orig.dump after.dump
t "integrity_check" [ "$(sqlite3 d.db 'pragma integrity_check')" = ok ]
before=$(sum d.db)
refused "decrypt a database in clear" "not encrypted (an SQLite database in clear)" \
	"$alex" decrypt --key-file=k2 d.db

# a sqlite3 process in a transaction holds SQLite's SHARED lock: refused
# until it commits
mkfifo in
sqlite3 d.db <in >held.out 2>&1 &
holder=$!
exec 3>in
printf 'begin;\nselect count(*) from t;\n.system touch held\n' >&3
for _ in $(seq 100); do [ -e held ] && break; sleep 0.1; done
t "the holder is in its transaction" [ -e held ]
refused "a database in use" "d.db: the database is in use by another process" \
	"$alex" encrypt --key-file=k1 d.db
printf 'commit;\n' >&3
exec 3>&-
wait "$holder"
holder=
"$alex" encrypt --key-file=k1 d.db >out 2>err
t "once it is done, encrypt succeeds ($(cat err))" [ $? -eq 0 ]
"$alex" decrypt --key-file=k1 d.db >out 2>err
t "... and decrypt" [ $? -eq 0 ]
sqlite3 d.db .dump >after.dump
t "the dump is still the original's" cmp -s orig.dump after.dump

# a symbolic link is refused (the rename would replace the link and leave
# the file it names in clear)
ln -s d.db link.db
refused "a symbolic link" "a symbolic link" "$alex" encrypt --key-file=k1 link.db
env -u ALEX_KEY_FILE "$alex" encrypt d.db >out 2>err
t "no key: bad usage (exit 2)" [ $? -eq 2 ]

echo "encrypt_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
