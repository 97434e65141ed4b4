/*
 * jsonout.h — what the tools add to json-c for their JSON documents: numbers with the
 * precision the documents promise (json-c alone prints %.17g), one printing of a tree, pretty
 * or on one line, and reading a member by its dotted path. Builds nothing else: the trees are
 * the tools'.
 */
#ifndef AVFS_JSONOUT_H
#define AVFS_JSONOUT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

/* A JSON number printed as printf prints v with fmt ("%.3f", "%.0f", "%.6g": one conversion
 * of a double), or NULL (JSON null) when v is not finite, which JSON cannot hold. */
json_object *avfs_json_double(double v, const char *fmt) __attribute__((format(printf, 2, 0)));

/* Print o and a newline to f: indented by two spaces a level (pretty), else on one line;
 * "key": value with a space, '/' not escaped. Drops the caller's reference to o (to print it
 * twice, pass json_object_get(o) the first time). 0, or -ENOMEM / -EIO. */
int avfs_json_print(FILE *f, json_object *o, bool pretty);
/* A tool's document: avfs_json_print to stdout, a failure said on stderr as prog's. The exit
 * code: 0, or 1 when it could not be printed. */
int avfs_json_stdout(json_object *o, bool pretty, const char *prog);

/* The member of o at a dotted path: "rt.margin_ms.p01" is o["rt"]["margin_ms"]["p01"]. NULL
 * when a step is missing or not an object (or o is NULL); else borrowed from o. */
json_object *avfs_json_get(json_object *o, const char *dotted_path);
/* Its value as a number (json-c's conversion), 0 when it is missing. */
double avfs_json_num(json_object *o, const char *dotted_path);
/* Its value as a string (json-c's conversion, borrowed from o), "" when it is missing. */
const char *avfs_json_str(json_object *o, const char *dotted_path);

#endif
