/* test_trace.c — the request trace's one column table (engine/trace.c): what the writer makes
 * the reader takes back, the header with and without service_ns, and bad lines refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "trace.h"

static void test_trace_round_trip(void **state)
{
	struct avfs_trace_rec r = { .submit_ns = 100, .complete_ns = 5000, .stream = 3,
				    .cls = AVFS_TRACE_RT, .write = true, .offset = 1ull << 40,
				    .length = 524288, .deadline_ns = 9000, .result = -62,
				    .service_ns = 1200 }, b;
	char line[AVFS_TRACE_LINE_MAX], head[256], why[160];
	size_t n = avfs_trace_format(&r, line, sizeof(line));

	(void)state;
	assert_true(n > 0 && n < sizeof(line) && line[n - 1] == '\n');
	line[n - 1] = 0;
	assert_int_equal(avfs_trace_parse(line, AVFS_TRACE_COLUMNS, &b, why, sizeof(why)), 0);
	assert_int_equal(b.submit_ns, r.submit_ns);
	assert_int_equal(b.complete_ns, r.complete_ns);
	assert_int_equal(b.stream, r.stream);
	assert_int_equal(b.cls, r.cls);
	assert_true(b.write);
	assert_int_equal(b.offset, r.offset);
	assert_int_equal(b.length, r.length);
	assert_int_equal(b.deadline_ns, r.deadline_ns);
	assert_int_equal(b.result, r.result);
	assert_int_equal(b.service_ns, r.service_ns);
	n = avfs_trace_header(head, sizeof(head));
	assert_int_equal(n, strlen(head));
	assert_string_equal(head, "submit_ns,complete_ns,stream,class,dir,offset,length,"
			    "deadline_ns,result,service_ns\n");
	head[n - 1] = 0;
	assert_int_equal(avfs_trace_parse_header(head), AVFS_TRACE_COLUMNS);
	head[strlen(head) - strlen(",service_ns")] = 0;	/* an older trace */
	assert_int_equal(avfs_trace_parse_header(head), AVFS_TRACE_COLUMNS - 1);
	assert_int_equal(avfs_trace_parse_header("submit_ns,complete"), -EINVAL);
}

static void test_trace_bad_lines(void **state)
{
	static const char *const bad[] = {
		"1,2,3,rt,r,0,4096,0,0,0",	/* rt without a deadline */
		"5,2,-1,be,r,0,4096,0,0,0",	/* completed before it was submitted */
		"1,2,-1,xx,r,0,4096,0,0,0",	/* no such class */
		"1,2,-1,be,x,0,4096,0,0,0",	/* no such direction */
		"1,2,-1,be,r,0,4096,0,5,0",	/* a positive result */
		"1,2,-1,be,r,0,4096,0,0",	/* a column missing */
		"1,2,-1,be,r,zero,4096,0,0,0",	/* not a number */
	};
	struct avfs_trace_rec r;
	char line[128], why[160];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "%s", bad[i]);
		why[0] = 0;
		assert_int_equal(avfs_trace_parse(line, AVFS_TRACE_COLUMNS, &r, why, sizeof(why)),
				 -EINVAL);
		assert_true(why[0]);
	}
	snprintf(line, sizeof(line), "1,2,-1,hp,r,0,4096,7,0");	/* an old trace's line */
	assert_int_equal(avfs_trace_parse(line, AVFS_TRACE_COLUMNS - 1, &r, why, sizeof(why)), 0);
	assert_int_equal(r.service_ns, -1);
	assert_int_equal(r.cls, AVFS_TRACE_HP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace_bad_lines),
		cmocka_unit_test(test_trace_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
