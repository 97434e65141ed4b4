/*
 * test_util.c — util/ alone: the size, rate, time, number and whole-number parsers (accepted
 * forms, exact large values, overflow, garbage, negative values), the why helper (NULL and
 * short buffers), array growth, the clocks, the JSON output helpers and the dotted-path
 * getter. Tables of cases, one line each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "grow.h"
#include "jsonout.h"
#include "units.h"
#include "why.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* What every parser refuses: not a number, signs, spaces, hex, inf, nan, junk after it. */
static const char *const garbage[] = {
	"", " ", "x", "K", ".", "-1", "-0", "+1", " 1", "1 ", "0x10", "inf", "nan", "1..2", "e3",
	"1e", "1e+", "1,5", "1 K",
};

static void test_util_size_forms(void **state)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{ "0", 0 }, { "4096", 4096 }, { "1K", 1024 }, { "1k", 1024 }, { "512K", 512 << 10 },
		{ "16M", 16 << 20 }, { "16m", 16 << 20 }, { "1G", 1ull << 30 }, { "8g", 8ull << 30 },
		{ "2T", 2ull << 40 }, { "2TiB", 2ull << 40 }, { "4Ki", 4096 }, { "4KB", 4096 },
		{ "4KiB", 4096 }, { "100B", 100 }, { "1.5K", 1536 }, { "0.5M", 512 << 10 },
		{ ".5K", 512 }, { "1.2K", 1228 },	/* a fraction of a byte dropped, as before */
		{ "1e3", 1000 }, { "18446744073709551615", UINT64_MAX },
		{ "16777215T", 16777215ull << 40 }, { "007", 7 },
	};
	static const char *const bad[] = { "4X", "4KX", "4iB", "4i", "4Kb", "4KBB", "4 K", "1K1" };
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < N(ok); i++) {
		v = 7;
		assert_int_equal(avfs_parse_size(ok[i].s, &v), 0);
		assert_true(v == ok[i].v);
	}
	for (size_t i = 0; i < N(bad); i++)
		assert_int_equal(avfs_parse_size(bad[i], &v), -EINVAL);
	for (size_t i = 0; i < N(garbage); i++)
		assert_int_equal(avfs_parse_size(garbage[i], &v), -EINVAL);
	assert_int_equal(avfs_parse_size(NULL, &v), -EINVAL);
}

static void test_util_size_overflow(void **state)
{
	static const char *const big[] = {
		"18446744073709551616", "99999999999999999999999", "16777216T", "17179869184G",
		"1e20", "16777216.5T", "1e400",
	};
	uint64_t v = 42;

	(void)state;
	for (size_t i = 0; i < N(big); i++)
		assert_int_equal(avfs_parse_size(big[i], &v), -ERANGE);
	assert_true(v == 42);	/* untouched on error */
}

static void test_util_rate_forms(void **state)
{
	static const struct {
		const char *s;
		bool bits;
		double v;	/* bytes/s */
	} ok[] = {
		{ "19.39M", true, 19.39e6 / 8 }, { "19.39M", false, 19.39e6 },
		{ "19.39m", true, 19.39e6 / 8 }, { "19.39Mbit", false, 19.39e6 / 8 },
		{ "19.39Mbps", false, 19.39e6 / 8 }, { "2MB", true, 2e6 }, { "2MB/s", true, 2e6 },
		{ "1000", false, 1000 }, { "1000", true, 125 }, { "1k", false, 1000 },
		{ "1K", false, 1000 }, { "1G", false, 1e9 }, { "1T", false, 1e12 },
		{ "8bit", false, 1 }, { "0", false, 0 }, { "1e6", false, 1e6 },
		{ "3MiB/s", true, 3 * 1048576.0 }, { "1MiB", true, 1048576 }, { "4KiB/s", true, 4096 },
		{ "1Mibit", false, 131072 }, { "1.5Gi", false, 1.5 * 1073741824.0 },
	};
	static const char *const bad[] = { "1X", "1Mb", "1Mbits", "1iB", "1MI", "1B/", "1 bit",
					   "1bit/s", "1MiiB" };
	double v;

	(void)state;
	for (size_t i = 0; i < N(ok); i++) {
		assert_int_equal(avfs_parse_rate(ok[i].s, ok[i].bits, &v), 0);
		assert_true(v == ok[i].v);
	}
	for (size_t i = 0; i < N(bad); i++)
		assert_int_equal(avfs_parse_rate(bad[i], false, &v), -EINVAL);
	for (size_t i = 0; i < N(garbage); i++)
		assert_int_equal(avfs_parse_rate(garbage[i], true, &v), -EINVAL);
	assert_int_equal(avfs_parse_rate("1e308T", false, &v), -ERANGE);
	assert_int_equal(avfs_parse_rate("1e999", false, &v), -ERANGE);
}

static void test_util_time_forms(void **state)
{
	static const struct {
		const char *s;
		int64_t ns;
	} ok[] = {
		{ "0", 0 }, { "0.0", 0 }, { "0s", 0 }, { "500ms", 500000000 }, { "2s", 2000000000 },
		{ "1.5s", 1500000000 }, { "100us", 100000 }, { "1500000ns", 1500000 },
		{ "0.5ns", 0 }, { "1e3ms", 1000000000 },
		{ "9223372036854775807ns", INT64_MAX }, { "9223372036s", 9223372036000000000 },
	};
	static const char *const bad[] = { "5", "1.5", "5m", "5 ms", "5MS", "5sec", "5mss", "1h" };
	static const char *const big[] = {
		"9223372036854775808ns", "9223372037s", "1e19ns", "1e300s", "99999999999999999999ns",
	};
	int64_t t = 42;

	(void)state;
	for (size_t i = 0; i < N(ok); i++) {
		assert_int_equal(avfs_parse_time(ok[i].s, &t), 0);
		assert_true(t == ok[i].ns);
	}
	t = 42;
	for (size_t i = 0; i < N(bad); i++)
		assert_int_equal(avfs_parse_time(bad[i], &t), -EINVAL);
	for (size_t i = 0; i < N(garbage); i++)
		assert_int_equal(avfs_parse_time(garbage[i], &t), -EINVAL);
	for (size_t i = 0; i < N(big); i++)
		assert_int_equal(avfs_parse_time(big[i], &t), -ERANGE);
	assert_true(t == 42);
}

static void test_util_scaled_and_number(void **state)
{
	double v;

	(void)state;
	assert_int_equal(avfs_parse_scaled("1K", 1000, &v), 0);
	assert_true(v == 1000);
	assert_int_equal(avfs_parse_scaled("1k", 1024, &v), 0);
	assert_true(v == 1024);
	assert_int_equal(avfs_parse_scaled("19.39M", 1000, &v), 0);
	assert_true(v == 19.39e6);
	assert_int_equal(avfs_parse_scaled("2g", 1000, &v), 0);
	assert_true(v == 2e9);
	assert_int_equal(avfs_parse_scaled("120", 1000, &v), 0);
	assert_true(v == 120);
	assert_int_equal(avfs_parse_scaled("1e6", 1000, &v), 0);
	assert_true(v == 1e6);
	assert_int_equal(avfs_parse_scaled("1KB", 1000, &v), -EINVAL);
	assert_int_equal(avfs_parse_scaled("1K", 10, &v), -EINVAL);	/* a base of neither */
	assert_int_equal(avfs_parse_scaled("1e308T", 1024, &v), -ERANGE);
	for (size_t i = 0; i < N(garbage); i++)
		assert_int_equal(avfs_parse_scaled(garbage[i], 1000, &v), -EINVAL);

	assert_int_equal(avfs_parse_number("0.8", &v), 0);
	assert_true(v == 0.8);
	assert_int_equal(avfs_parse_number("0", &v), 0);
	assert_true(v == 0);
	assert_int_equal(avfs_parse_number("1K", &v), -EINVAL);
	assert_int_equal(avfs_parse_number("1s", &v), -EINVAL);
	for (size_t i = 0; i < N(garbage); i++)
		assert_int_equal(avfs_parse_number(garbage[i], &v), -EINVAL);
}

static void test_util_uint_forms(void **state)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{ "0", 0 }, { "42", 42 }, { "0x2a", 42 }, { "0X2A", 42 }, { "052", 42 },
		{ "18446744073709551615", UINT64_MAX }, { "0xffffffffffffffff", UINT64_MAX },
	};
	static const char *const bad[] = { "1K", "1.5", "1e3", "0x", "08", "12a", "0xg" };
	uint64_t v = 7;

	(void)state;
	for (size_t i = 0; i < N(ok); i++) {
		assert_int_equal(avfs_parse_uint(ok[i].s, &v), 0);
		assert_true(v == ok[i].v);
	}
	for (size_t i = 0; i < N(bad); i++)
		assert_int_equal(avfs_parse_uint(bad[i], &v), -EINVAL);
	for (size_t i = 0; i < N(garbage); i++)	/* but hex, which C's whole numbers have */
		assert_int_equal(avfs_parse_uint(garbage[i], &v), strcmp(garbage[i], "0x10") ?
				 -EINVAL : 0);
	v = 7;
	assert_int_equal(avfs_parse_uint("18446744073709551616", &v), -ERANGE);
	assert_int_equal(avfs_parse_uint("0x10000000000000000", &v), -ERANGE);
	assert_true(v == 7);	/* untouched on error */
}

static void test_util_why(void **state)
{
	char buf[8] = "unset";

	(void)state;
	avfs_why(NULL, 0, "nothing %d", 1);	/* not asked: no crash */
	avfs_why(buf, 0, "nothing %d", 2);
	assert_string_equal(buf, "unset");
	avfs_why(buf, sizeof(buf), "%s is %d", "x", 42);
	assert_string_equal(buf, "x is 42");
	avfs_why(buf, sizeof(buf), "a longer message");	/* cut to fit, terminated */
	assert_string_equal(buf, "a longe");
}

static void test_util_clock(void **state)
{
	int64_t a, b, w;

	(void)state;
	a = avfs_clock_ns();
	avfs_clock_sleep_until(a + 2000000);
	b = avfs_clock_ns();
	assert_true(b >= a + 2000000);
	avfs_clock_sleep_until(a);	/* past: at once */
	avfs_clock_sleep_until(-1);
	w = avfs_clock_realtime_ns();
	assert_true(w > 1600000000ll * 1000000000);	/* after 2020 */
}

/* The text a tree prints as, without the newline; the tree is dropped. */
static char *printed(json_object *o, bool pretty)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(avfs_json_print(f, o, pretty), 0);
	assert_int_equal(fclose(f), 0);
	assert_true(len > 0 && text[len - 1] == '\n');
	text[len - 1] = 0;
	return text;
}

static void test_util_json_output(void **state)
{
	json_object *o = json_object_new_object();
	char *text;

	(void)state;
	json_object_object_add(o, "device", json_object_new_string("/dev/sda \"x\""));
	json_object_object_add(o, "ms", avfs_json_double(8.33333333, "%.4f"));
	json_object_object_add(o, "rate", avfs_json_double(19390000, "%.0f"));
	json_object_object_add(o, "p0", avfs_json_double(0, "%.6g"));
	json_object_object_add(o, "nan", avfs_json_double(NAN, "%.3f"));
	json_object_object_add(o, "big", json_object_new_uint64(UINT64_MAX));
	text = printed(json_object_get(o), false);
	assert_string_equal(text, "{ \"device\": \"/dev/sda \\\"x\\\"\", \"ms\": 8.3333, "
			    "\"rate\": 19390000, \"p0\": 0, \"nan\": null, "
			    "\"big\": 18446744073709551615 }");
	free(text);
	/* the value stays readable in the tree */
	assert_true(json_object_get_double(json_object_object_get(o, "ms")) == 8.33333333);
	text = printed(o, true);
	assert_non_null(strstr(text, "{\n  \"device\": \"/dev/sda \\\"x\\\"\",\n  \"ms\": 8.3333,\n"));
	free(text);
}

/* avfs_grow: the array as it is while there is room, then doubled from the first capacity,
 * the elements kept; a size that would overflow is refused with the array untouched. */
static void test_util_grow(void **state)
{
	uint32_t *v = NULL, *g;
	size_t cap = 0, n;

	(void)state;
	for (n = 0; n < 100; n++) {
		g = avfs_grow(v, &cap, n, sizeof(*v), 4);
		assert_non_null(g);
		assert_true(n < cap);
		assert_true(cap == 4 || (cap >= 8 && cap / 2 <= n));	/* doubled when full */
		v = g;
		v[n] = (uint32_t)n * 7;
	}
	assert_int_equal(cap, 128);
	for (n = 0; n < 100; n++)
		assert_int_equal(v[n], n * 7);
	assert_ptr_equal(avfs_grow(v, &cap, 100, sizeof(*v), 4), v);	/* room: v itself */
	n = cap;
	assert_null(avfs_grow(v, &cap, cap, SIZE_MAX / 2, 4));	/* the bytes overflow */
	assert_int_equal(cap, n);
	assert_int_equal(v[99], 99 * 7);
	free(v);
}

/* The dotted-path getter the tools read the daemon's documents with: nested members, and
 * 0, "" or NULL for a path that is missing, runs through a non-object, or starts at NULL. */
static void test_util_json_path(void **state)
{
	json_object *o = json_tokener_parse("{ \"rt\": { \"margin_ms\": { \"p01\": 12.5 }, "
					    "\"requests\": 7 }, \"policy\": \"tm\" }");

	(void)state;
	assert_non_null(o);
	assert_true(avfs_json_num(o, "rt.margin_ms.p01") == 12.5);
	assert_true(avfs_json_num(o, "rt.requests") == 7);
	assert_string_equal(avfs_json_str(o, "policy"), "tm");
	assert_string_equal(avfs_json_str(o, "rt.requests"), "7");
	assert_ptr_equal(avfs_json_get(o, "rt.margin_ms"),
			 json_object_object_get(json_object_object_get(o, "rt"), "margin_ms"));
	assert_null(avfs_json_get(o, "rt.missing.p01"));
	assert_null(avfs_json_get(o, "policy.tm"));	/* through a string */
	assert_null(avfs_json_get(NULL, "rt"));
	assert_true(avfs_json_num(o, "rt.margin_ms.p02") == 0);
	assert_string_equal(avfs_json_str(o, "mixer.policy"), "");
	json_object_put(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_util_clock),
		cmocka_unit_test(test_util_grow),
		cmocka_unit_test(test_util_json_output),
		cmocka_unit_test(test_util_json_path),
		cmocka_unit_test(test_util_rate_forms),
		cmocka_unit_test(test_util_scaled_and_number),
		cmocka_unit_test(test_util_size_forms),
		cmocka_unit_test(test_util_size_overflow),
		cmocka_unit_test(test_util_time_forms),
		cmocka_unit_test(test_util_uint_forms),
		cmocka_unit_test(test_util_why),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
