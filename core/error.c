/* error.c - one message table for the engine's codes and errno values. */
#include <string.h>

#include "alex.h"

const char *alex_strerror(int code)
{
	switch (code) {
	case 0: return "success";
	case ALEX_ECORRUPT: return "log header damaged or not an ALEX log";
	case ALEX_EVERSION: return "log written by an unsupported format version";
	case ALEX_EBUSY: return "busy: a spilled or truncating transaction, an undecided group or staged commits are in the way";
	case ALEX_EFAILED: return "log unusable after an earlier I/O failure; reopen to recover";
	case ALEX_EINVAL: return "invalid argument or configuration value";
	case ALEX_ENOMEM: return "out of memory";
	case ALEX_EBADBLOCK: return "block in the log failed its checksum";
	case ALEX_EINUSE: return "the database is in use by another process";
	case ALEX_EFOREIGN: return "the log belongs to another database (the database header it "
				   "records does not match this file)";
	case ALEX_EPERMS: return "the log is open to users the database is not, and its mode "
				 "cannot be narrowed";
	case ALEX_EKEY: return "wrong key: the database is encrypted with another one";
	case ALEX_ENOKEY: return "the database is encrypted, and no key was given (ALEX_KEY_FILE)";
	case ALEX_EPLAIN: return "the database is not encrypted, and a key was given (alex encrypt "
				 "converts it)";
	case ALEX_EORPHAN: return "the database carries the fence of an ALEX log that is not beside "
				  "it (moved, renamed or deleted while it held the newest pages)";
	}
	/* strerror is not thread-safe for unknown codes only; these are known */
	return code > 0 ? strerror(code) : "unknown ALEX error";
}

const char *alex_stop_name(enum alex_stop reason)
{
	switch (reason) {
	case ALEX_STOP_NONE: return "valid record";
	case ALEX_STOP_END: return "end of log";
	case ALEX_STOP_STALE: return "end of log (older epoch or abandoned chain)";
	case ALEX_STOP_BAD_MAGIC: return "bad record magic";
	case ALEX_STOP_BAD_HEADER: return "bad record header";
	case ALEX_STOP_BAD_TABLE: return "bad block table";
	case ALEX_STOP_BAD_BLOCK: return "block checksum mismatch";
	case ALEX_STOP_BAD_PADDING: return "non-zero record padding";
	case ALEX_STOP_TRUNCATED: return "record runs past end of file";
	}
	return "unknown";
}

const char *alex_damage_name(enum alex_stop reason)
{
	return reason == ALEX_STOP_END ? "zeros where a record should be" : alex_stop_name(reason);
}
