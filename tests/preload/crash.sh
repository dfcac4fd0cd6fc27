#!/bin/bash
# crash.sh BUILD N - kills a writer under ALEX with SIGKILL at random moments,
# N times, on one database.  After each kill the database must open under
# ALEX with integrity_check ok and hold every row whose COMMIT the writer
# had acknowledged; rows the writer wrote must be intact.  A 1 MiB
# checkpoint threshold makes kills land inside checkpoints too.
set -u
B=$(cd "${1:?usage: crash.sh BUILD N}" && pwd)
N=${2:-50}
here=$(cd "$(dirname "$0")" && pwd)
lib=$B/libalex.so
tmp=$(mktemp -d /tmp/alex-crash.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export ALEX_CHECKPOINT_MB=1
pass=0 fail=0
# the table exists before the first kill, which can come before the writer
# has made it (a slow start): the checks below must always be able to ask
LD_PRELOAD=$lib sqlite3 "$tmp/crash.db" \
	"create table if not exists t(id integer primary key, payload blob)"
for i in $(seq 1 "$N"); do
	LD_PRELOAD=$lib python3 "$here/crash_writer.py" "$tmp/crash.db" "$i" >"$tmp/acks" 2>"$tmp/err" &
	pid=$!
	sleep "0.$(( (RANDOM % 50) + 15 ))"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	acked=$(tail -n 1 "$tmp/acks")
	acked=${acked:-0}
	res=$(LD_PRELOAD=$lib sqlite3 "$tmp/crash.db" \
		"pragma integrity_check; select count(*) from t where id <= $acked;
		 select count(*) from t where length(payload) not in (100) and length(payload) < 20000;
		 select count(*) from t where hex(substr(payload, 1, 1)) <> printf('%02X', id % 251);" 2>"$tmp/verr")
	grep -q "cannot be used" "$tmp/verr" && res="$res (recovery reported lost commits)"
	want=$(printf 'ok\n%s\n0\n0' "$acked")
	if [ "$res" = "$want" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL kill $i: acknowledged $acked, got: $(echo "$res" | tr '\n' ' ')"
		head -3 "$tmp/err"
	fi
done
rows=$(LD_PRELOAD=$lib sqlite3 "$tmp/crash.db" "select count(*) from t")
echo "crash: $N kills, $rows rows at the end"
echo "crash: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
