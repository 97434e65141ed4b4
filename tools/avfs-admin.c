/*
 * avfs-admin — the operator's command line (SPEC §10): status, streams, reserve, release,
 * stats, trace against a running avfsd over its client socket; plot and profile work alone.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "admin.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: avfs-admin [--socket PATH] COMMAND [ARGS]\n"
		"  status                     the daemon, its device and its load\n"
		"  streams                    every reservation\n"
		"  reserve FILE --rate R --buffer B [--read|--write]\n"
		"  release ID\n"
		"  stats [--json]             QoS statistics\n"
		"  trace --duration S --out FILE   record a request trace (docs/TRACE.md)\n"
		"  plot TRACE --out FILE.svg  draw a trace\n"
		"  profile DEVICE             measure a disk (sim:MODEL for a simulated one)\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "plot"))
		return admin_plot(argc - 1, argv + 1);
	if (!strcmp(argv[1], "profile"))
		return admin_profile(argc - 1, argv + 1);
	fprintf(stderr, "avfs-admin: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
