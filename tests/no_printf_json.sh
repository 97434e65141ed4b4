#!/bin/bash
# no_printf_json.sh — no JSON is built with printf (issue 17, Done when 5): outside the tests,
# no C string holds a JSON key ("\"name\":" or "\"%s\":"), so every document the programs
# write comes from json-c. It first shows that the pattern catches such a line.
# usage: no_printf_json.sh SOURCE_ROOT
set -u
SRC=$1
PATTERN='\\"[A-Za-z0-9_.%]+\\" *:'
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
printf '%s\n' 'printf("{\"rt_requests\": %llu, ", n);' 'fprintf(f, "\"%s\": %.3f", k, v);' >"$T/bad.c"
if [ "$(grep -cE "$PATTERN" "$T/bad.c")" != 2 ]; then
	echo "FAIL: the pattern misses printf-built JSON"
	exit 1
fi
echo "ok the pattern catches printf-built JSON (2 of 2 lines)"
cd "$SRC" || exit 1
dirs=(alloc bench daemon disk engine examples fs fuse libavio model proto sched sim tools util)
if grep -rnE "$PATTERN" --include='*.c' --include='*.h' "${dirs[@]}"; then
	echo "FAIL: JSON built by hand above; build it with json-c (util/jsonout.h)"
	exit 1
fi
echo "ok no JSON key in a C string in ${dirs[*]}: every document comes from json-c"
echo "2 passed, 0 failed"
