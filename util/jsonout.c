/*
 * jsonout.c — json-c output helpers of jsonout.h: fixed-precision numbers and the printing
 * flags every tool shares. No parsing here (the tools read JSON with json-c directly).
 */
#include "jsonout.h"

#include <errno.h>
#include <math.h>
#include <string.h>

json_object *avfs_json_double(double v, const char *fmt)
{
	char text[64];

	if (!isfinite(v))
		return NULL;
	snprintf(text, sizeof(text), fmt, v);
	/* the value for readers of the tree, the text for its serialization */
	return json_object_new_double_s(v, text);
}

int avfs_json_print(FILE *f, json_object *o, bool pretty)
{
	int flags = JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE |
		    (pretty ? JSON_C_TO_STRING_PRETTY : 0);
	const char *s = json_object_to_json_string_ext(o, flags);	/* o's, freed with it */
	int err = !s ? -ENOMEM : fprintf(f, "%s\n", s) < 0 ? -EIO : 0;

	json_object_put(o);
	return err;
}

int avfs_json_stdout(json_object *o, bool pretty, const char *prog)
{
	int err = avfs_json_print(stdout, o, pretty);

	if (err)
		fprintf(stderr, "%s: cannot print the JSON: %s\n", prog, strerror(-err));
	return err ? 1 : 0;
}
