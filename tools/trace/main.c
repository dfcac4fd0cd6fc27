/* main.c - `alex trace [--json|--csv|--perfetto|--plot PNG] FILE` (trace.h). */
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static int usage(void)
{
	fprintf(stderr, "usage: alex trace [--json | --csv | --perfetto | --plot FILE.png] "
			"[--transactions N] TRACE\n");
	return 2;
}

int alex_trace_main(int argc, char **argv)
{
	const char *how = "text", *png = NULL, *path = NULL;
	int shown = 5;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "--csv") ||
		    !strcmp(argv[i], "--perfetto"))
			how = argv[i] + 2;
		else if (!strcmp(argv[i], "--plot") && i + 1 < argc)
			png = argv[++i];
		else if (!strcmp(argv[i], "--transactions") && i + 1 < argc)
			shown = atoi(argv[++i]);
		else if (argv[i][0] == '-' || path)
			return usage();
		else
			path = argv[i];
	}
	struct tr_model m;
	if (!path)
		return usage();
	if (tr_load(path, &m))
		return 1;
	int st = 0;
	if (png)
		st = tr_plot(&m, png);
	else if (!strcmp(how, "json"))
		tr_json(&m, stdout);
	else if (!strcmp(how, "csv"))
		tr_csv(&m, stdout);
	else if (!strcmp(how, "perfetto"))
		tr_perfetto(&m, stdout);
	else
		tr_report(&m, stdout, shown);
	if (m.rd.damaged) {
		fprintf(stderr, "alex trace: %s: damaged at byte %llu (%s); the valid part is "
				"reported\n", path, (unsigned long long)m.rd.first_bad, m.rd.why);
		st = 1;
	}
	tr_free(&m);
	return st;
}
