/* admin_profile.c — avfs-admin profile (being written) */
#include "config.h"

#include <stdio.h>

#include "admin.h"

int admin_profile(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "avfs-admin: profile is not built yet\n");
	return 1;
}
