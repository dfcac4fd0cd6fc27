/*
 * alex - look after the ALEX log of an SQLite database.
 *
 *   alex checkpoint FILE   copy the log into FILE and remove the log (kept with
 *                          --keep-log or ALEX_KEEP_LOG=1); FILE is a plain
 *                          database after
 *   alex stat FILE         what the log holds
 *   alex verify FILE       exit 1 if the log is damaged (not just cut short)
 *   alex recover FILE      salvage what the log holds that is valid into FILE,
 *                          then set the log aside (renamed, never deleted);
 *                          FILE fenced by a log that is gone: the mark comes
 *                          off, and FILE holds its last checkpoint
 *   alex encrypt|decrypt FILE, alex rekey FILE --new-key-file=PATH
 *                          FILE rewritten whole, stored encrypted with the
 *                          key (--key-file=PATH or ALEX_KEY_FILE), in clear,
 *                          or with the new key
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alex.h"
#include "convert.h"
#include "doctor/doctor.h"
#include "inspect.h"
#include "io_over.h"
#include "trace/trace.h"
#include "sqlite_locks.h"
#include "xts.h"

static int usage(FILE *f)
{
	fprintf(f, "usage: alex checkpoint [--keep-log] FILE\n"
		   "       alex stat|verify|recover FILE\n"
		   "         (an encrypted database: the key from ALEX_KEY_FILE)\n"
		   "       alex encrypt|decrypt [--key-file=PATH] FILE\n"
		   "       alex rekey [--key-file=PATH] --new-key-file=PATH FILE\n"
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
		if (errno == EAGAIN || errno == EACCES)
			fprintf(stderr, "alex: %s: the database is in use by another process\n",
				path);
		else
			fprintf(stderr, "alex: %s: cannot lock it: %s\n", path, strerror(errno));
		syscall(SYS_close, *fd);
		return 1;
	}
	return 0;
}

/*
 * encrypt, decrypt, rekey: the database rewritten whole beside itself and
 * renamed over itself (core/convert.c).  SQLite's locks, taken as for the
 * other commands, keep every program out until the rename is done; a file
 * beside the database that holds pages not yet in it (ALEX's log, a hot
 * journal, a WAL) would be left in the old form, so it is refused.
 */
/* The key in file, and (x not NULL) its cipher for the conversion. */
static int load_key(const char *file, struct alex_key **k, struct alex_xts **x)
{
	char why[256];
	int err;

	if (alex_key_load(file, k, why, sizeof why)) {
		fprintf(stderr, "alex: %s: %s\n", file, why);
		return 1;
	}
	if (x && (err = alex_xts_new(*k, x))) {
		fprintf(stderr, "alex: %s: cannot key the cipher: %s\n", file, strerror(err));
		alex_key_free(*k);
		*k = NULL;
		return 1;
	}
	return 0;
}

/* Is anything beside path that the conversion would leave behind? */
static int siblings_clear(const char *path)
{
	static const struct {
		const char *suffix, *why, *then;
	} beside[] = {
		{ "-alex", "ALEX's log may hold pages not yet in the database",
		  "run alex checkpoint FILE first" },
		{ "-alex-stage", "ALEX's staging log may hold commits not yet in the database",
		  "run alex checkpoint FILE first" },
		{ "-journal", "a hot journal, which SQLite rolls back at its next read",
		  "read the database once first: sqlite3 FILE 'pragma schema_version' "
		  "(under alex-run with its key, if encrypted)" },
		{ "-wal", "SQLite's WAL may hold pages not yet in the database",
		  "set journal_mode=delete on it with sqlite3 first" },
	};
	char name[4200];
	int yes = 0;

	for (size_t i = 0; i < sizeof beside / sizeof *beside; i++) {
		snprintf(name, sizeof name, "%s%s", path, beside[i].suffix);
		if (alex_io_posix.ops->exists(alex_io_posix.ctx, name, &yes) == 0 && yes &&
		    /* a cold one SQLite leaves as it is; libalex.so removes it */
		    !(strcmp(beside[i].suffix, "-journal") == 0 && alex_journal_cold(name))) {
			const char *then = beside[i].then, *file = strstr(then, "FILE");
			fprintf(stderr, "alex: %s: %s is beside it (%s): ", path, name, beside[i].why);
			if (file)
				fprintf(stderr, "%.*s%s%s\n", (int)(file - then), then, path, file + 4);
			else
				fprintf(stderr, "%s\n", then);
			return 0;
		}
	}
	return 1;
}

static int convert_main(int argc, char **argv)
{
	const char *cmd = argv[1], *path = NULL, *keyf = getenv("ALEX_KEY_FILE"), *newf = NULL;
	int rekey = strcmp(cmd, "rekey") == 0, enc = strcmp(cmd, "encrypt") == 0;
	struct alex_key *k = NULL, *nk = NULL;
	struct alex_xts *x = NULL, *nx = NULL;
	struct stat st;
	char why[4400];
	int lockfd, rc = 1, err;

	for (int i = 2; i < argc; i++) {
		if (strncmp(argv[i], "--key-file=", 11) == 0)
			keyf = argv[i] + 11;
		else if (rekey && strncmp(argv[i], "--new-key-file=", 15) == 0)
			newf = argv[i] + 15;
		else if (argv[i][0] == '-' || path)
			return usage(stderr);
		else
			path = argv[i];
	}
	if (!path || (rekey && !newf))
		return usage(stderr);
	if (!keyf || !*keyf) {
		fprintf(stderr, "alex: %s: no key (--key-file=PATH or ALEX_KEY_FILE)\n", cmd);
		return 2;
	}
	/* a rename over a symbolic link would replace the link, and leave the
	 * file it names as it was */
	if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		fprintf(stderr, "alex: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (S_ISLNK(st.st_mode)) {
		fprintf(stderr, "alex: %s: a symbolic link: give the file it names\n", path);
		return 1;
	}
	if (load_key(keyf, &k, &x) || (rekey && load_key(newf, &nk, &nx)))
		goto out;
	if (lock_db(path, &lockfd))
		goto out;
	if (siblings_clear(path)) {
		/* the lock's descriptor stays open until the rename is done:
		 * closing any descriptor of the file would drop the lock */
		err = alex_convert(&alex_io_posix, path, enc ? NULL : x, enc ? x : rekey ? nx : NULL,
				   why, sizeof why);
		if (err)
			fprintf(stderr, "alex: %s: %s\n", path, why);
		else
			printf("%s: %s\n", path,
			       enc ? "encrypted (AES-256-XTS)" :
			       rekey ? "encrypted with the new key (AES-256-XTS)" : "decrypted");
		rc = err != 0;
	}
	syscall(SYS_close, lockfd);
out:
	alex_xts_free(x);
	alex_xts_free(nx);
	alex_key_free(k);
	alex_key_free(nk);
	return rc;
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
/* A database fenced by a log that is not beside it, and what to do. */
static void say_orphan(const char *path)
{
	fprintf(stderr, "alex: %s: %s; put it back as %s-alex, or keep only the database's last "
			"checkpoint: alex recover %s\n", path, alex_strerror(ALEX_EORPHAN), path, path);
}

/* The set-aside log's change counter (alex-log(5)) counts nothing now. */
static void forget_counter(const char *log)
{
	char shm[4300];
	snprintf(shm, sizeof shm, "%s-shm", log);
	unlink(shm);
}

/* log renamed LOG.recovered-TIME (that name into aside), its counter
 * forgotten; 1 after saying why not. */
static int set_aside(const char *log, char *aside, size_t cap)
{
	char stamp[32];
	time_t now = time(NULL);

	strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
	snprintf(aside, cap, "%s.recovered-%s", log, stamp);
	if (rename(log, aside) != 0) {
		fprintf(stderr, "alex: %s: %s\n", log, strerror(errno));
		return 1;
	}
	forget_counter(log);
	return 0;
}

/* The database file synced: a checkpoint's unmark is not, and a log set
 * aside after it, its name gone first, would leave the fence with no log
 * (second review: a healthy database refused after a power cut). */
static int sync_db(const char *path)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC);

	if (fd < 0 || syscall(SYS_fdatasync, fd) != 0) {
		fprintf(stderr, "alex: %s: cannot sync it: %s\n", path, strerror(errno));
		if (fd >= 0)
			syscall(SYS_close, fd);
		return 1;
	}
	syscall(SYS_close, fd);
	return 0;
}

/* The database opened without its log, as of its last checkpoint, and
 * ALEX's mark taken off it, durably: it is a plain database after. */
static int unfence(const char *path, struct alex_config *cfg)
{
	alex_db *db;
	int rc;

	cfg->orphan_ok = 1;
	if ((rc = alex_open(path, cfg, NULL, &db)) == 0) {
		rc = alex_checkpoint(db);
		alex_close(db);
	}
	if (rc) {
		fprintf(stderr, "alex: %s: cannot clear ALEX's mark: %s\n", path, alex_strerror(rc));
		return 1;
	}
	return sync_db(path);
}

static int recover(const char *path, struct alex_config *cfg)
{
	char log[4200], aside[4300];
	struct alex_stats st;
	alex_db *db;
	int rc;

	snprintf(log, sizeof log, "%s-alex", path);
	if (access(log, F_OK) != 0) {
		/* a fence with no log: the log went without the database */
		if ((rc = alex_open(path, cfg, NULL, &db)) == 0)
			alex_close(db);
		if (rc != ALEX_EORPHAN) {
			if (rc)
				fprintf(stderr, "alex: %s: %s\n", path, alex_strerror(rc));
			else
				printf("%s: no log, nothing to recover\n", path);
			return rc != 0;
		}
		/* another name of the same file may have the log beside it
		 * (second review: a hard link's recover took a live log's
		 * fence off) */
		struct stat st1;
		if (stat(path, &st1) == 0 && st1.st_nlink > 1) {
			fprintf(stderr, "alex: %s: %s; the file has %lu names (hard links), and its log "
					"may be beside another: recover by that name, or remove the "
					"other names first\n", path, alex_strerror(rc),
				(unsigned long)st1.st_nlink);
			return 1;
		}
		if (unfence(path, cfg))
			return 1;
		forget_counter(log);
		printf("%s: its log is not beside it; ALEX's mark taken off, the database holds its "
		       "last checkpoint (the commits after it were in the missing log)\n", path);
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
		if (sync_db(path) || set_aside(log, aside, sizeof aside))
			return 1;
		printf("%s: %llu commits salvaged into the database; log set aside as %s\n", path,
		       (unsigned long long)st.recovered_commits, aside);
		return 0;
	}
	fprintf(stderr, "alex: %s: %s: nothing in it can be used\n", log, alex_strerror(rc));
	if (set_aside(log, aside, sizeof aside) || unfence(path, cfg))
		return 1;
	printf("%s: log set aside as %s; the database holds its last checkpoint\n", path, aside);
	return 0;
}

/*
 * A staging log (libalex.so's NORMAL mode, docs/STAGING.md) holds commits
 * the log below lacks, named by the point below stood at: any command
 * that may move below (checkpoint, recover) would orphan them, so every
 * command first merges them, as the last close of a program would have.
 * The caller holds the database's lock, and no engine has it open.
 */
static int merge_staged(const char *path, const struct alex_config *cfg, int ckpt, int recovering)
{
	char stage[4200];
	struct alex_config ca = *cfg;
	struct alex_io_over *ov = NULL;
	struct alex_stats st;
	alex_db *b = NULL, *a = NULL;
	int rc;

	snprintf(stage, sizeof stage, "%s-alex-stage", path);
	if (access(stage, F_OK) != 0)
		return 0;
	if (cfg->key) {
		fprintf(stderr, "alex: %s: a staging log, which an encrypted database never has: "
				"look at it with alex inspect %s\n", stage, stage);
		return 1;
	}
	alex_config_over(&ca);
	ca.remove_log = 1;
	if ((rc = alex_open(path, cfg, NULL, &b)) == ALEX_EORPHAN && recovering) {
		/* its commits lie over the log that is gone: set aside with it
		 * (second review: recover failed here, with no way out said) */
		char aside[4300];
		if (set_aside(stage, aside, sizeof aside))
			return 1;
		printf("%s: its commits name the log that is not beside %s: set aside as %s\n",
		       stage, path, aside);
		return 0;
	}
	if (rc == ALEX_EORPHAN) {
		say_orphan(path);
		return 1;
	}
	if (rc) {
		fprintf(stderr, "alex: %s-alex: %s\n", path, alex_strerror(rc));
		return 1;
	}
	struct alex_io io;
	if (!(rc = alex_io_over_new(b, NULL, &ov))) {
		io = alex_io_over(ov);
		rc = alex_open(path, &ca, &io, &a);
	}
	if (!rc) {
		alex_stats(a, &st);
		rc = alex_merge_room(a, b);
	}
	/* checkpoint and recover end the epoch, which says STAGED: only an
	 * engine with the staging engine over it may (core/ckpt.c) */
	if (!rc && ckpt)
		rc = alex_checkpoint(b);
	if (a && alex_close(a) && !rc)
		rc = ALEX_EINVAL;
	alex_io_over_free(ov);
	alex_close(b);
	if (rc) {
		fprintf(stderr, "alex: %s: cannot merge its staged commits: %s (both logs are kept)\n",
			stage, alex_strerror(rc));
		return 1;
	}
	if (st.recovered_commits)
		printf("%s: %llu staged commits merged into %s-alex\n", stage,
		       (unsigned long long)st.recovered_commits, path);
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
		if (rc == ALEX_EORPHAN)
			say_orphan(path);
		else
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
	if (argc >= 2 && (strcmp(argv[1], "encrypt") == 0 || strcmp(argv[1], "decrypt") == 0 ||
			  strcmp(argv[1], "rekey") == 0))
		return convert_main(argc, argv);
	const char *keep_env = getenv("ALEX_KEEP_LOG");
	int keep = keep_env && strcmp(keep_env, "1") == 0;
	if (argc == 4 && strcmp(argv[1], "checkpoint") == 0 && strcmp(argv[2], "--keep-log") == 0) {
		keep = 1;
		argv[2] = argv[3];
		argc = 3;
	}
	if (argc != 3)
		return usage(stderr);
	char real[4096];
	const char *cmd = argv[1], *path = alex_tool_db_path(argv[2], real, sizeof real);
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
	/* an encrypted database and log: the key libalex.so was given */
	struct alex_key *key = NULL;
	const char *kf = getenv("ALEX_KEY_FILE");
	if (kf && *kf) {
		if (load_key(kf, &key, NULL)) {
			syscall(SYS_close, lockfd);
			return 1;
		}
		cfg.key = key;
	}
	int recovering = strcmp(cmd, "recover") == 0;
	if (merge_staged(path, &cfg, ckpt || recovering, recovering)) {
		syscall(SYS_close, lockfd);
		alex_key_free(key);
		return 1;
	}
	if (strcmp(cmd, "recover") == 0) {
		rc = recover(path, &cfg);
		syscall(SYS_close, lockfd);
		alex_key_free(key);
		return rc;
	}
	rc = run(cmd, path, &cfg, keep);
	syscall(SYS_close, lockfd);
	alex_key_free(key);
	return rc;
}
