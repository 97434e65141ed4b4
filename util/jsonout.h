/*
 * jsonout.h — what the tools add to json-c to print their --json documents: numbers with the
 * precision the documents promise (json-c alone prints %.17g) and one printing of a tree, pretty
 * or on one line. Builds nothing else: the trees are the tools'.
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

#endif
