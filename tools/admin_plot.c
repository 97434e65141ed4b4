/* admin_plot.c — avfs-admin plot (being written) */
#include "config.h"

#include <stdio.h>

#include "admin.h"

int admin_plot(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "avfs-admin: plot is not built yet\n");
	return 1;
}
