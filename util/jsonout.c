/*
 * jsonout.c — json-c helpers of jsonout.h: fixed-precision numbers, the printing flags every
 * tool shares, and the dotted-path getter the tools read the daemon's documents with. No
 * parsing here (json-c's tokener does it).
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

json_object *avfs_json_get(json_object *o, const char *dotted_path)
{
	const char *p = dotted_path, *dot;
	char key[64];

	while (o && (dot = strchr(p, '.'))) {
		size_t n = (size_t)(dot - p);

		if (n >= sizeof(key))
			return NULL;	/* longer than any key of the documents */
		memcpy(key, p, n);
		key[n] = 0;
		o = json_object_object_get(o, key);	/* NULL for a non-object */
		p = dot + 1;
	}
	return o ? json_object_object_get(o, p) : NULL;
}

double avfs_json_num(json_object *o, const char *dotted_path)
{
	json_object *v = avfs_json_get(o, dotted_path);

	return v ? json_object_get_double(v) : 0;
}

const char *avfs_json_str(json_object *o, const char *dotted_path)
{
	json_object *v = avfs_json_get(o, dotted_path);

	return v ? json_object_get_string(v) : "";
}
