#!/bin/bash
# crashtest.sh BUILD quick|long - power cuts with a disk that reorders.
#
# Each phase runs an SQLite workload (powercut.c) once under the test build
# of the library with ALEX_TEST_RECORD: every change the processes make to
# the database's files -- the engine's and SQLite's own (the WAL, the file in
# WAL mode) -- and every acknowledged COMMIT goes into one trace.  Then, for
# a cut before the K-th write, sync or truncation, cutfs rebuilds what a
# disk could hold: every unsynced change lost, kept, the newest torn at a
# sector, or any subset of them kept, each whole or sector by sector
# (MODEL, SEED); in the short and keep phases also with the directory's
# name changes since its last sync lost (MODEL+dirs: the log's making,
# renaming and removal).  Each rebuilt directory is judged twice:
#   under ALEX   integrity_check ok; the state after some committed
#                transaction, no acknowledged one missing (FULL; NORMAL: none
#                older than the sync window), contents equal to what plain
#                SQLite reaches by running the same transactions
#   without      SQLite refuses the file ("file is not a database"), or reads
#                exactly what ALEX reads -- never anything else
# Phases:
#   first   a fresh database, 6 transactions, the default settings: the
#           close-time checkpoint is the first of a placeholder file
#   short   six processes one after another, one transaction each, on a
#           database plain SQLite made, the default settings: each makes a
#           new log, whose first fence rides on the commit's sync, and
#           removes it at its last close (protect.c)
#   keep    the same with ALEX_KEEP_LOG=1 and two transactions a process:
#           the log stays, and each process's epoch follows the last one's
#           records, its fence riding on its first commit's sync
#           (core/format.h)
#   full    320 transactions from an empty file, checkpoints every MiB
#   early   1200 transactions with the default checkpoint size (64 MiB):
#           the log passes 4 MiB holding few pages, and FULL mode's early
#           checkpoint runs (commit.c, ckpt_due); quick: the sample and
#           every cut around a sync of the database file
#   normal  the same with ALEX_SYNC=normal, paced, unstaged (ALEX_STAGE=0)
#   staged  the same with ALEX_STAGE=1: commits in <db>-alex-stage, merged
#           into the log once per window (docs/STAGING.md); the judge's
#           ALEX finds the staging log and goes through it
#   carried the same, 1200 transactions and a 10 ms window: the log below
#           passes its 1 MiB again and again, and its checkpoints carry
#           (core/carry.c): the copy in slices inside later merges, its
#           sync, the letting go (the recording must have let one go; with
#           a key none does: an encrypted log does not carry); quick: the
#           sample and every cut around a sync of the database file, as in
#           early
#   wal     the same in WAL mode, with SQLite's own WAL checkpoints
#   attach  two databases attached, every transaction writes both (SQLite's
#           super-journal): all or none of each in both
#   multi   two processes writing one database at once
# With ALEX_KEY_FILE set (tests/preload/with_key.sh) every database is
# encrypted: short and keep start from plain SQLite's database put through
# `alex encrypt`, the wal phase runs in rollback mode (WAL is declined with
# a key), and the judge without ALEX sees SQLite refuse every cut.
# quick: every cut of "first", "short" and "keep", a sample of the others
# (make check);
# long: every cut of every phase in several models (make crashtest-long).
# Prints per phase and in all "crashtest: N cuts, M failed".
set -u
B=$(cd "${1:?usage: crashtest.sh BUILD quick|long}" && pwd)
profile=${2:-quick}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/alex-crashtest.XXXXXX)
keep_fail=${CRASHTEST_KEEP:-/tmp}
trap 'rm -rf "$tmp"' EXIT
PC=$B/tests/powercut
CUTFS=$B/tests/cutfs
JOBS=${CRASHTEST_JOBS:-2}
total_cuts=0 total_fail=0

# record PHASE: runs the phase's workload into $tmp/PHASE/{run,trace}
record() {
	local p=$1 d=$tmp/$1
	rm -rf "$d" && mkdir -p "$d/run" "$d/start"
	local env=(env LD_PRELOAD="$B/libalex-test.so" ALEX_TEST_RECORD="$d/trace"
		ALEX_CHECKPOINT_MB=1 ALEX_SYNC_MS=50)
	case $p in
	first) env LD_PRELOAD="$B/libalex-test.so" ALEX_TEST_RECORD="$d/trace" \
		"$PC" run "$d/run/db.db" "$d/acks" 6 0 ;;
	short|keep)
		# plain SQLite: only its acknowledgements are recorded (the
		# starting directory's files count as synced)
		env -u LD_PRELOAD ALEX_TEST_RECORD="$d/trace" \
			"$PC" run "$d/start/db.db" "$d/pre" 3 0 || return 1
		# with a key (with_key.sh) the processes open an encrypted one
		if [ -n "${ALEX_KEY_FILE:-}" ]; then
			"$B/alex" encrypt "$d/start/db.db" >/dev/null || return 1
		fi
		cp "$d/start/db.db" "$d/run/db.db"
		# keep: two transactions a process, so that an epoch's chain
		# has a record after its first for a later one to break
		local keep=0 step=1 i
		[ "$p" = keep ] && keep=1 step=2
		for i in $(seq 4 $step $((3 + 6 * step))); do
			env LD_PRELOAD="$B/libalex-test.so" ALEX_TEST_RECORD="$d/trace" \
				ALEX_KEEP_LOG=$keep "$PC" run "$d/run/db.db" "$d/acks" \
				$((i + step - 1)) 0 $i || return 1
		done ;;
	full) "${env[@]}" "$PC" run "$d/run/db.db" "$d/acks" 320 0 ;;
	early) "${env[@]}" ALEX_CHECKPOINT_MB=64 "$PC" run "$d/run/db.db" "$d/acks" 1200 0 ;;
	normal) "${env[@]}" ALEX_SYNC=normal ALEX_STAGE=0 "$PC" run "$d/run/db.db" "$d/acks" 320 2000 ;;
	staged) "${env[@]}" ALEX_SYNC=normal ALEX_STAGE=1 "$PC" run "$d/run/db.db" "$d/acks" 320 2000 ;;
	carried)
		"${env[@]}" ALEX_SYNC=normal ALEX_STAGE=1 ALEX_SYNC_MS=10 ALEX_STATS="$d/stats-%p.json" \
			"$PC" run "$d/run/db.db" "$d/acks" 1200 500 || return 1
		# a run whose log below never carried tests nothing new -- but
		# an encrypted log never carries (carry.c): with a key the phase
		# is the staged one, longer
		local applied
		applied=$(cat "$d"/stats-*.json | grep -o '"carry_applies": [0-9]*' |
			awk '{ s += $2 } END { print s + 0 }')
		echo "carried epochs copied and let go: $applied"
		[ "$applied" -gt 0 ] || [ -n "${ALEX_KEY_FILE:-}" ] ;;
	wal) "${env[@]}" POWERCUT_JOURNAL=wal "$PC" run "$d/run/db.db" "$d/acks" 320 0 ;;
	attach) "${env[@]}" "$B/tests/attach" run "$d/run" 2 30 ;;
	multi)
		"${env[@]}" "$PC" mrun "$d/run/db.db" 0 150 &
		local a=$!
		"${env[@]}" "$PC" mrun "$d/run/db.db" 1 150
		local st=$?
		wait $a || return 1
		return $st ;;
	esac
}

# attach_verdict D C: the attach phase's judges, in the directory the run
# used: a conditional commit names its super-journal by absolute path, as
# SQLite's journals do, so the databases must be where they were.  One cut
# at a time (flock); the plain verdict goes to C/plain.verdict.
attach_verdict() {
	local d=$1 c=$2
	rm -rf "$d/run" && cp -r "$c/alex" "$d/run"
	LD_PRELOAD=$B/libalex.so "$B/tests/attach" check "$d/run" 2 "$c/alex/.acks" full \
		2>"$c/stderr"
	rm -rf "$d/run" && cp -r "$c/plain" "$d/run"
	env -u LD_PRELOAD "$B/tests/attach" check "$d/run" 2 "$c/alex/.acks" full \
		>"$c/plain.verdict" 2>&1
	rm -rf "$d/run"
}
export -f attach_verdict

# judge PHASE K MODEL SEED -> prints nothing on success, one line on failure
judge() {
	local p=$1 k=$2 model=$3 seed=$4 d=$tmp/$1 c
	c=$(mktemp -d "$tmp/cut.XXXXXX")
	if ! "$CUTFS" cut "$d/trace" "$d/start" "$c/alex" "$k" "$model" "$seed" 2>"$c/err"; then
		echo "FAIL $p K=$k $model $seed: cutfs: $(head -c 200 "$c/err")"
		rm -rf "$c"; return
	fi
	cp -r "$c/alex" "$c/plain" && cp -r "$c/alex" "$c/alex2"
	local mode=full cut_ns verdict
	case $p in normal|staged|carried) mode=normal ;; esac
	cut_ns=$(awk '{ print $1; exit }' "$c/alex/.cut")
	if [ "$p" = attach ]; then
		verdict=$(flock "$d/judge.lock" bash -c 'attach_verdict "$@"' _ "$d" "$c")
	elif [ "$p" = multi ]; then
		verdict=$(LD_PRELOAD=$B/libalex.so "$PC" mcheck "$c/alex/db.db" "$c/alex/.acks" 2 "$mode" \
			2>"$c/stderr")
	else
		awk '{ print $2, $3 }' "$c/alex/.acks" >"$c/acks"
		verdict=$(LD_PRELOAD=$B/libalex.so ALEX_SYNC=$mode "$PC" check "$c/alex/db.db" "$c/acks" \
			"$mode" 50 "$cut_ns" 2>"$c/stderr")
	fi
	local why=""
	case $verdict in ok*) ;; *) why="under ALEX: $verdict $(head -c 300 "$c/stderr")" ;; esac
	if [ -z "$why" ] && [ "$p" = attach ]; then
		# without ALEX: each database refused, or all read as under ALEX
		local b
		b=$(cat "$c/plain.verdict")
		case $b in
		*"file is not a database"*) ;;
		"$verdict") ;;
		*) why="without ALEX: '$b', under ALEX: '$verdict'" ;;
		esac
	elif [ -z "$why" ]; then
		local a b
		# what ALEX opened, alex inspect must not call another's
		if [ -e "$c/alex2/db.db-alex" ] &&
			"$B/alex" inspect "$c/alex2/db.db" 2>&1 | grep -q "not this database file's"; then
			why="alex inspect calls the log foreign, ALEX opened it"
		fi
		a=$(LD_PRELOAD=$B/libalex.so "$PC" digest "$c/alex2/db.db" 2>/dev/null)
		b=$(env -u LD_PRELOAD "$PC" digest "$c/plain/db.db" 2>/dev/null)
		case $b in
		"error file is not a database") ;;
		"$a") ;;
		*) why="without ALEX: '$b', under ALEX: '$a'" ;;
		esac
	fi
	if [ -n "$why" ]; then
		echo "FAIL $p K=$k $model $seed ($(cut -d' ' -f2- "$c/alex/.cut")): $why"
		local keep
		keep=$keep_fail/alex-crashtest-fail-$p-$k-$model-$seed
		rm -rf "$keep" && cp -r "$c" "$keep" && cp "$d/trace" "$keep/trace"
	fi
	rm -rf "$c"
}
export -f judge
export B PC CUTFS tmp keep_fail

# cuts PHASE: the list of "PHASE K MODEL SEED" to judge
cuts() {
	local p=$1 n k i
	n=$("$CUTFS" count "$tmp/$p/trace" | head -n 1)
	[ "${n:-0}" -gt 0 ] || { echo "FAIL $p: nothing recorded" >&2; return 1; }
	echo "crashtest: $p: $n writes, syncs and truncations recorded" >&2
	local models=(lose keep tear subset)
	if [ "$p" = first ] || [ "$p" = short ] || [ "$p" = keep ] || [ "$profile" = long ]; then
		for k in $(seq 1 $((n + 1))); do
			for m in lose keep tear subset; do echo "$p $k $m $k"; done
			if [ "$profile" = long ] || [ "$p" = first ] || [ "$p" = short ] || [ "$p" = keep ]; then
				echo "$p $k subset $((k * 7 + 1))"
				echo "$p $k subset $((k * 13 + 2))"
			fi
			# the directory's name changes since its last sync lost
			# too: where ALEX makes every name (the log's, in a
			# directory plain SQLite filled)
			if [ "$p" = short ] || [ "$p" = keep ]; then
				for m in lose keep subset; do echo "$p $k $m+dirs $((k * 5 + 3))"; done
			fi
		done
	else
		for i in $(seq 0 39); do
			k=$((1 + i * n / 40))
			echo "$p $k ${models[$((i % 4))]} $((k * 3 + i))"
		done
		# early, carried: around every sync of the database file (the
		# fences and the checkpoints' copies), each model
		if [ "$p" = early ] || [ "$p" = carried ]; then
			local ino
			ino=$("$CUTFS" dump "$tmp/$p/trace" |
				awk '$4 == "name" && $NF == "db.db" { print $6; exit }')
			"$CUTFS" dump "$tmp/$p/trace" |
				awk -v ino="$ino" '$4 ~ /sync/ && $6 == ino { for (d = -1; d <= 1; d++) print $2 + d }' |
				sort -n -u | while read -r k; do
				[ "$k" -ge 1 ] && [ "$k" -le $((n + 1)) ] || continue
				for m in lose keep tear subset; do echo "$p $k $m $((k * 11 + 5))"; done
			done
		fi
	fi
}

phases=${CRASHTEST_PHASES:-first short keep full early normal staged carried wal attach multi}
for p in $phases; do
	if ! record "$p" >"$tmp/$p.out" 2>&1; then
		echo "FAIL $p: the recorded run failed: $(tail -n 3 "$tmp/$p.out")"
		total_fail=$((total_fail + 1))
		continue
	fi
	cuts "$p" >"$tmp/$p.jobs" || { total_fail=$((total_fail + 1)); continue; }
	n=$(wc -l <"$tmp/$p.jobs")
	xargs -P "$JOBS" -L 1 bash -c 'judge "$@"' _ <"$tmp/$p.jobs" >"$tmp/$p.fails"
	f=$(grep -c '^FAIL' "$tmp/$p.fails")
	head -n 5 "$tmp/$p.fails"
	echo "crashtest: $p: $n cuts, $f failed"
	total_cuts=$((total_cuts + n))
	total_fail=$((total_fail + f))
done
echo "crashtest: $total_cuts cuts, $total_fail failed"
[ "$total_fail" -eq 0 ] && [ "$total_cuts" -gt 0 ]
