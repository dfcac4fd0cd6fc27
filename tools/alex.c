/*
 * alex - look after the ALEX log of an SQLite database.
 *
 *   alex checkpoint FILE   copy the log into FILE and remove the log (kept with
 *                          --keep-log or ALEX_KEEP_LOG=1); FILE is a plain
 *                          database after
 *   alex stat FILE         what the log holds
 *   alex verify FILE       exit 1 if the log is damaged (not just cut short)
 *   alex recover FILE      salvage what the log holds that is valid into FILE,
 *                          then set the log aside (renamed, never deleted)
 *
 * Each takes SQLite's exclusive lock on FILE and the log's exclusive lock
 * first, so it never runs under a program that has the database open,
 * with or without ALEX.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alex.h"
#include "doctor/doctor.h"
#include "inspect.h"
#include "trace/trace.h"
#include "sqlite_locks.h"

static int usage(FILE *f)
{
	fprintf(f, "usage: alex checkpoint [--keep-log] FILE\n"
		   "       alex stat|verify|recover FILE\n"
		   "       alex inspect [--json] FILE\n"
		   "       alex doctor [--json] PROGRAM [ARGS...]\n"
		   "       alex trace [--json|--csv|--perfetto|--plot PNG] TRACE\n"
		   "       alex --help | --version\n");
	return f == stdout ? 0 : 2;
}

/*
 * SQLite's EXCLUSIVE lock: pending, reserved and the shared range.  Taken
 * with system calls, not libc: with libalex.so preloaded into this tool (a
 * shell that exports LD_PRELOAD, alex-run), a libc open of the database
 * would give the tool an engine of its own, whose last close checkpoints
 * and removes the very log the tool was asked about.  The engine itself
 * enters the kernel directly too (core/io_posix.c).
 */
static int lock_db(const char *path, int *fd)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = SQLITE_PENDING_BYTE,
			   .l_len = SQLITE_LOCK_BYTES };

	*fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC);
	if (*fd < 0) {
		fprintf(stderr, "alex: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (syscall(SYS_fcntl, *fd, F_SETLK, &l) != 0) {
		fprintf(stderr, "alex: %s: the database is in use by another process\n", path);
		syscall(SYS_close, *fd);
		return 1;
	}
	return 0;
}

static void report(const char *path, const struct alex_stats *s)
{
	if (!s->log_present) {
		printf("%s: no log; the database file holds everything\n", path);
		return;
	}
	if (s->epoch_applied) {
		printf("%s-alex: its records were checkpointed before a crash; the database file "
		       "holds everything\n", path);
		return;
	}
	printf("%s-alex: %llu records, %llu commits, %llu bytes of log in use\n", path,
	       (unsigned long long)s->recovered_records, (unsigned long long)s->recovered_commits,
	       (unsigned long long)s->log_used);
	printf("log ends at byte %llu: %s", (unsigned long long)s->stop_offset,
	       alex_stop_name(s->stop_reason));
	if (s->dropped_records)
		printf(" (%llu records not committed or damaged)",
		       (unsigned long long)s->dropped_records);
	printf("\n");
	if (s->header_repaired)
		printf("a damaged header slot was rewritten from the log\n");
}

/* A conditional commit: one database's part of a transaction across
 * databases (SQLite's ATTACH and its super-journal), and its fate. */
static int show_cond(void *arg, const struct alex_recinfo *ri)
{
	(void)arg;
	if (!ri->cond)
		return 0;
	printf("record at byte %llu (txn %llu, %u blocks): part of a transaction across "
	       "databases, super-journal %s: %s\n", (unsigned long long)ri->off,
	       (unsigned long long)ri->txn, ri->nblocks, ri->cond,
	       ri->state == ALEX_RS_UNDECIDED ?
		       "not committed (its super-journal exists); the next program to open "
		       "the database rolls it back" : alex_rec_state_name(ri->state));
	return 0;
}

/*
 * recover: everything valid before the damage goes into the database (the
 * checkpoint), then the log is renamed FILE-alex.recovered-TIME so that its
 * bytes stay for inspection and the next open starts a clean log.  A log
 * whose header cannot be used at all is set aside first, and the database
 * is then opened with a fresh log only to take ALEX's mark off it: it holds
 * what its last checkpoint wrote.
 */
/* The set-aside log's change counter (alex-log(5)) counts nothing now. */
static void forget_counter(const char *log)
{
	char shm[4300];
	snprintf(shm, sizeof shm, "%s-shm", log);
	unlink(shm);
}

static int recover(const char *path, struct alex_config *cfg)
{
	char log[4200], aside[4300], stamp[32];
	struct alex_stats st;
	alex_db *db;
	time_t now = time(NULL);
	int rc;

	strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
	snprintf(log, sizeof log, "%s-alex", path);
	snprintf(aside, sizeof aside, "%s.recovered-%s", log, stamp);
	if (access(log, F_OK) != 0) {
		printf("%s: no log, nothing to recover\n", path);
		return 0;
	}
	rc = alex_open(path, cfg, NULL, &db);
	if (rc == 0) {
		alex_stats(db, &st);
		report(path, &st);
		if ((rc = alex_checkpoint(db))) {
			fprintf(stderr, "alex: %s: recovery failed: cannot write the database: %s "
					"(the log is unchanged)\n", path, alex_strerror(rc));
			alex_close(db);
			return 1;
		}
		alex_close(db);
		if (rename(log, aside) != 0) {
			fprintf(stderr, "alex: %s: %s\n", log, strerror(errno));
			return 1;
		}
		forget_counter(log);
		printf("%s: %llu commits salvaged into the database; log set aside as %s\n", path,
		       (unsigned long long)st.recovered_commits, aside);
		return 0;
	}
	fprintf(stderr, "alex: %s: %s: nothing in it can be used\n", log, alex_strerror(rc));
	if (rename(log, aside) != 0) {
		fprintf(stderr, "alex: %s: %s\n", log, strerror(errno));
		return 1;
	}
	forget_counter(log);
	if ((rc = alex_open(path, cfg, NULL, &db)) || (rc = alex_checkpoint(db))) {
		fprintf(stderr, "alex: %s: cannot clear ALEX's mark: %s\n", path, alex_strerror(rc));
		return 1;
	}
	alex_close(db);
	printf("%s: log set aside as %s; the database holds its last checkpoint\n", path, aside);
	return 0;
}

/* stat, verify or checkpoint path, whose lock the caller holds: the exit
 * status. */
static int run(const char *cmd, const char *path, const struct alex_config *cfg, int keep)
{
	int ckpt = strcmp(cmd, "checkpoint") == 0;
	struct alex_stats st;
	alex_db *db;
	int rc;

	if ((rc = alex_open(path, cfg, NULL, &db))) {
		fprintf(stderr, "alex: %s-alex: %s\n", path, alex_strerror(rc));
		return 1;
	}
	alex_stats(db, &st);
	/* zeros followed by this epoch's records are lost commits too */
	int damaged = st.stop_reason > ALEX_STOP_STALE || st.lost_offset;
	if (!ckpt) {
		report(path, &st);
		if ((rc = alex_records(db, show_cond, NULL)))
			fprintf(stderr, "alex: %s-alex: cannot list its records: %s\n", path,
				alex_strerror(rc));
	}
	if (ckpt && (rc = alex_checkpoint(db))) {
		fprintf(stderr, "alex: %s: checkpoint failed: %s (the log is unchanged)\n", path,
			alex_strerror(rc));
		alex_close(db);
		return 1;
	}
	if (ckpt && damaged)
		fprintf(stderr, "alex: %s-alex: log damaged at byte %llu (%s); the commits before "
				"it were checkpointed; the log is kept for inspection\n", path,
			(unsigned long long)st.stop_offset, alex_damage_name(st.stop_reason));
	/* at rest nothing stays beside the database, as after the last close
	 * of a program under ALEX -- but a damaged log is evidence */
	if (ckpt && !damaged && !keep && (rc = alex_remove_log(db)))
		fprintf(stderr, "alex: %s-alex: not removed: %s\n", path, alex_strerror(rc));
	alex_close(db);
	if (strcmp(cmd, "verify") == 0 && damaged) {
		fprintf(stderr, "alex: %s-alex: damaged at byte %llu: %s", path,
			(unsigned long long)st.stop_offset,
			alex_damage_name(st.stop_reason));
		if (st.lost_offset)
			fprintf(stderr, "; committed records after it (from byte %llu) cannot be used",
				(unsigned long long)st.lost_offset);
		fprintf(stderr, "\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct alex_config cfg;
	int lockfd, rc;

	if (argc == 2 && strcmp(argv[1], "--help") == 0)
		return usage(stdout);
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("alex %s\n", ALEX_VERSION_STRING);
		return 0;
	}
	/* read-only, no lock: it works on a log in use (tools/inspect.c) */
	if (argc >= 2 && strcmp(argv[1], "inspect") == 0)
		return alex_inspect_main(argc - 1, argv + 1);
	/* reads a program with libelf, never runs it (tools/doctor/) */
	if (argc >= 2 && strcmp(argv[1], "doctor") == 0)
		return alex_doctor_main(argc - 1, argv + 1);
	/* the report of a trace that ALEX_MODE=trace wrote (tools/trace/) */
	if (argc >= 2 && strcmp(argv[1], "trace") == 0)
		return alex_trace_main(argc - 1, argv + 1);
	const char *keep_env = getenv("ALEX_KEEP_LOG");
	int keep = keep_env && strcmp(keep_env, "1") == 0;
	if (argc == 4 && strcmp(argv[1], "checkpoint") == 0 && strcmp(argv[2], "--keep-log") == 0) {
		keep = 1;
		argv[2] = argv[3];
		argc = 3;
	}
	if (argc != 3)
		return usage(stderr);
	const char *cmd = argv[1], *path = argv[2];
	int ckpt = strcmp(cmd, "checkpoint") == 0;
	if (!ckpt && strcmp(cmd, "stat") && strcmp(cmd, "verify") && strcmp(cmd, "recover"))
		return usage(stderr);
	if (access(path, F_OK) != 0) {
		fprintf(stderr, "alex: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (lock_db(path, &lockfd))
		return 1;
	alex_config_default(&cfg);
	cfg.checkpoint_on_close = 0;
	cfg.exclusive = 1; /* no engine in any process may have it open */
	cfg.db_only = 1;   /* libalex.so logs only the database: -journal and
			      -wal are SQLite's (a hot journal must survive) */
	if (strcmp(cmd, "recover") == 0) {
		rc = recover(path, &cfg);
		syscall(SYS_close, lockfd);
		return rc;
	}
	rc = run(cmd, path, &cfg, keep);
	syscall(SYS_close, lockfd);
	return rc;
}
