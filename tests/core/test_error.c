/* The message tables of error.c: every engine code of alex.h has its own
 * message, errno values pass through to strerror, and unknown codes are
 * named as such rather than crashing or borrowing another's text. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "alex.h"

static const int codes[] = {
	ALEX_ECORRUPT, ALEX_EVERSION, ALEX_EBUSY,     ALEX_EFAILED, ALEX_EINVAL,
	ALEX_ENOMEM,   ALEX_EBADBLOCK, ALEX_EINUSE,   ALEX_EFOREIGN, ALEX_EPERMS,
	ALEX_EKEY,     ALEX_ENOKEY,    ALEX_EPLAIN,   ALEX_EORPHAN,
};
#define NCODES (sizeof codes / sizeof codes[0])

#define UNKNOWN "unknown ALEX error"

/* A code without a case in alex_strerror falls to the generic text: each
 * of alex.h's codes must have a real, distinct message. */
Test(error, every_engine_code_has_its_own_message)
{
	for (size_t i = 0; i < NCODES; i++) {
		const char *m = alex_strerror(codes[i]);
		cr_assert_not_null(m, "code %d", codes[i]);
		cr_expect_gt(strlen(m), 8u, "code %d: '%s'", codes[i], m);
		cr_expect_str_neq(m, UNKNOWN, "code %d has no message", codes[i]);
		cr_expect_str_neq(m, "success", "code %d", codes[i]);
		for (size_t j = 0; j < i; j++)
			cr_expect_str_neq(m, alex_strerror(codes[j]), "codes %d and %d share '%s'",
					  codes[i], codes[j], m);
	}
}

/* The codes are a dense block -1001..-1014; the values just outside it,
 * and other negatives, are unknown. */
Test(error, codes_outside_the_table_are_unknown)
{
	cr_expect_eq(ALEX_ECORRUPT, -1001);
	cr_expect_eq(ALEX_EORPHAN, -1014);
	cr_expect_eq(NCODES, 14u);
	cr_expect_str_eq(alex_strerror(-1000), UNKNOWN);
	cr_expect_str_eq(alex_strerror(-1015), UNKNOWN);
	cr_expect_str_eq(alex_strerror(-1), UNKNOWN);
	cr_expect_str_eq(alex_strerror(-1100), UNKNOWN); /* internal ALEX_ENOLOG */
	cr_expect_str_eq(alex_strerror(INT32_MIN), UNKNOWN);
}

Test(error, zero_is_success)
{
	cr_expect_str_eq(alex_strerror(0), "success");
}

/* Positive codes are errno values the engine passed through: the caller
 * sees the system's own words for them. */
Test(error, errno_values_read_as_strerror)
{
	static const int errs[] = { EIO, ENOSPC, EDQUOT, EFBIG, EAGAIN, ENOENT, EACCES };

	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
		cr_expect_str_eq(alex_strerror(errs[i]), strerror(errs[i]), "errno %d", errs[i]);
	cr_expect_str_neq(alex_strerror(EIO), alex_strerror(ENOSPC));
}

/* Each message says what the code means: a wrong case label (two codes
 * swapped) would fail here, not only a missing one. */
Test(error, messages_match_their_codes)
{
	cr_expect_not_null(strstr(alex_strerror(ALEX_EVERSION), "version"));
	cr_expect_not_null(strstr(alex_strerror(ALEX_ENOMEM), "memory"));
	cr_expect_not_null(strstr(alex_strerror(ALEX_EBADBLOCK), "checksum"));
	cr_expect_not_null(strstr(alex_strerror(ALEX_EINUSE), "in use"));
	cr_expect_not_null(strstr(alex_strerror(ALEX_EINVAL), "invalid"));
	cr_expect_not_null(strstr(alex_strerror(ALEX_EFOREIGN), "another database"));
	cr_expect_not_null(strstr(alex_strerror(ALEX_EORPHAN), "not beside it"));
}

/* Why recovery stopped: a distinct name for every reason (NONE, a valid
 * record, included), "unknown" past the last one. */
Test(error, every_stop_reason_has_a_distinct_name)
{
	const char *seen[ALEX_STOP_TRUNCATED - ALEX_STOP_NONE + 1];

	for (int r = ALEX_STOP_NONE; r <= ALEX_STOP_TRUNCATED; r++) {
		int i = r - ALEX_STOP_NONE;
		seen[i] = alex_stop_name((enum alex_stop)r);
		cr_assert_not_null(seen[i]);
		cr_expect_str_neq(seen[i], "unknown", "reason %d", r);
		for (int j = 0; j < i; j++)
			cr_expect_str_neq(seen[i], seen[j], "reasons %d and %d", r,
					  j + ALEX_STOP_NONE);
	}
	cr_expect_str_eq(alex_stop_name((enum alex_stop)(ALEX_STOP_TRUNCATED + 1)), "unknown");
	cr_expect_str_eq(alex_stop_name((enum alex_stop)100), "unknown");
}

/* The damage wording differs from the stop wording only for END: zeros
 * where a record should be are damage when records follow them. */
Test(error, damage_name_differs_only_at_the_end)
{
	cr_expect_str_neq(alex_damage_name(ALEX_STOP_END), alex_stop_name(ALEX_STOP_END));
	cr_expect_not_null(strstr(alex_damage_name(ALEX_STOP_END), "zeros"));
	for (int r = ALEX_STOP_STALE; r <= ALEX_STOP_TRUNCATED; r++)
		cr_expect_str_eq(alex_damage_name((enum alex_stop)r),
				 alex_stop_name((enum alex_stop)r), "reason %d", r);
}
