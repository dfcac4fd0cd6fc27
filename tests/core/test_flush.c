/* alex_flush_due: when NORMAL mode syncs.  It is a pure function of the
 * unsynced bytes and the time they have waited, so every boundary of the
 * window -- the byte threshold and the time threshold -- is tried exactly,
 * without a clock. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <time.h>

#include "flush.h"

#define MS 1000000ull /* nanoseconds */

static struct alex_config cfg_of(unsigned sync_ms, uint64_t extent)
{
	struct alex_config c;

	alex_config_default(&c);
	c.sync = ALEX_SYNC_NORMAL;
	c.sync_ms = sync_ms;
	c.extent_bytes = extent;
	return c;
}

/* Nothing unsynced is never due, however long ago "since" was and whatever
 * the thresholds: a sync then would be wasted. */
Test(flush, nothing_unsynced_is_never_due)
{
	struct alex_config c = cfg_of(100, 1 << 20);

	cr_expect_eq(alex_flush_due(&c, 0, 0, 0), 0);
	cr_expect_eq(alex_flush_due(&c, 0, 0, UINT64_MAX), 0);
	c = cfg_of(0, 0); /* even when both thresholds are zero */
	cr_expect_eq(alex_flush_due(&c, 0, 5, 1000 * MS), 0);
}

/* One table of cases around both edges: one byte or one nanosecond on
 * either side of extent_bytes and sync_ms. */
struct due_case {
	uint64_t bytes, since, now;
	int due;
};

#define EXT (1u << 20)
#define WIN (100 * MS)
#define T0 (7 * 1000 * MS) /* an arbitrary monotonic start */

ParameterizedTestParameters(flush, window_boundaries)
{
	static struct due_case cases[] = {
		/* bytes below the extent: only time decides */
		{ 1, T0, T0, 0 },
		{ 1, T0, T0 + WIN - 1, 0 },
		{ 1, T0, T0 + WIN, 1 },
		{ 1, T0, T0 + WIN + 1, 1 },
		{ EXT - 1, T0, T0, 0 },
		{ EXT - 1, T0, T0 + WIN - 1, 0 },
		{ EXT - 1, T0, T0 + WIN, 1 },
		/* at or past the extent: due at once, whatever the time */
		{ EXT, T0, T0, 1 },
		{ EXT + 1, T0, T0, 1 },
		{ UINT64_MAX, T0, T0, 1 },
		/* since == 0 is a valid start, not "never" */
		{ 1, 0, WIN - 1, 0 },
		{ 1, 0, WIN, 1 },
	};
	return cr_make_param_array(struct due_case, cases, sizeof cases / sizeof cases[0]);
}
ParameterizedTest(struct due_case *k, flush, window_boundaries)
{
	struct alex_config c = cfg_of(100, EXT);

	cr_expect_eq(alex_flush_due(&c, k->bytes, k->since, k->now), k->due,
		     "bytes %llu waited %llu ns", (unsigned long long)k->bytes,
		     (unsigned long long)(k->now - k->since));
}

/* Sweeps the window one step at a time for several windows: the answer
 * turns from 0 to 1 exactly at sync_ms and never turns back. */
Test(flush, sweep_turns_due_exactly_once)
{
	static const unsigned windows[] = { 1, 2, 10, 100, 1000 };

	for (unsigned w = 0; w < sizeof windows / sizeof windows[0]; w++) {
		struct alex_config c = cfg_of(windows[w], UINT64_MAX);
		uint64_t edge = windows[w] * MS;
		for (uint64_t d = edge - 3; d <= edge + 3; d++)
			cr_assert_eq(alex_flush_due(&c, 4096, T0, T0 + d), d >= edge,
				     "window %u ms, waited %llu ns", windows[w],
				     (unsigned long long)d);
	}
}

/* sync_ms 0: any unsynced commit is due at once (FULL-like timing). */
Test(flush, zero_window_is_due_at_once)
{
	struct alex_config c = cfg_of(0, EXT);

	cr_expect_eq(alex_flush_due(&c, 1, T0, T0), 1);
}

/* extent_bytes 0: the byte threshold is always met. */
Test(flush, zero_extent_is_due_at_once)
{
	struct alex_config c = cfg_of(1000, 0);

	cr_expect_eq(alex_flush_due(&c, 1, T0, T0), 1);
}

/* The largest sync_ms must not wrap in 32 bits: UINT_MAX ms is about 50
 * days, and one nanosecond short of it is not due. */
Test(flush, largest_window_does_not_overflow)
{
	struct alex_config c = cfg_of(UINT32_MAX, UINT64_MAX);
	uint64_t edge = (uint64_t)UINT32_MAX * MS;

	cr_expect_eq(alex_flush_due(&c, 1, T0, T0 + 1000 * MS), 0);
	cr_expect_eq(alex_flush_due(&c, 1, T0, T0 + edge - 1), 0);
	cr_expect_eq(alex_flush_due(&c, 1, T0, T0 + edge), 1);
}

/* The clock the engine feeds it is monotonic and in nanoseconds: a 2 ms
 * sleep shows as at least 2,000,000 and well under a minute. */
Test(flush, now_is_monotonic_nanoseconds)
{
	uint64_t a = alex_now_ns(), b = alex_now_ns();
	struct timespec ts = { 0, 2 * MS };

	cr_expect_geq(b, a);
	nanosleep(&ts, NULL);
	uint64_t c = alex_now_ns();
	cr_expect_geq(c - b, 2 * MS);
	cr_expect_lt(c - b, 60000 * MS);
}
