/*
 * fuzz_scenario.c — libFuzzer target: avfs-sim's scenario parser (sim/scenario.c). A scenario
 * it accepts must pass its own cross-key check or say why, and its canonical form must parse
 * back to the same canonical form (aborts otherwise).
 */
#include "scenario.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct avfs_scenario s, t;
	char why[512];
	char *a = NULL, *b = NULL;
	size_t na, nb;

	if (avfs_scenario_parse("fuzz", (const char *)data, size, &s, why, sizeof(why)))
		return 0;
	avfs_scenario_check(&s, why, sizeof(why));
	na = avfs_scenario_format(&s, NULL, 0);
	a = malloc(na + 1);
	if (!a)
		abort();
	avfs_scenario_format(&s, a, na + 1);
	if (avfs_scenario_parse("canonical", a, na, &t, why, sizeof(why))) {
		fprintf(stderr, "the canonical form does not parse back: %s\n%s", why, a);
		abort();
	}
	nb = avfs_scenario_format(&t, NULL, 0);
	b = malloc(nb + 1);
	if (!b)
		abort();
	avfs_scenario_format(&t, b, nb + 1);
	if (na != nb || memcmp(a, b, na)) {
		fprintf(stderr, "the canonical form changes on a round trip:\n%s---\n%s", a, b);
		abort();
	}
	free(a);
	free(b);
	avfs_scenario_free(&s);
	avfs_scenario_free(&t);
	return 0;
}
