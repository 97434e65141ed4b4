/*
 * test_scenario.c — scenario files (sim/scenario.c): a full file read key by key, the defaults,
 * comments and spacing, the canonical form reading back to the same scenario, the command
 * line's overrides, and every kind of bad file refused with its line and field, the scenario
 * left untouched. Links with the parser's library alone (sched/ and util/ under it).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scenario.h"
#include "zrr.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define MIB 1048576.0

static int parse(const char *text, struct avfs_scenario *s, char *why, size_t len)
{
	return avfs_scenario_parse("t.scn", text, strlen(text), s, why, len);
}

static const char full[] =
	"# papers/004 Table 3.1, every key\n"
	"disk = barracuda-500g\n"
	"size = 64G\n"
	"fill = 0.5\n"
	"fill-rate = 8Mbit\n"
	"alloc = contig\n"
	"block-size = 1M\n"
	"policy = cscan\n"
	"margin = 300ms   # the mixer's m\n"
	"urgent = 50ms\n"
	"chunk = 64K\n"
	"jit = on\n"
	"bw = at-once\n"
	"predictor = rotpred\n"
	"duration = 600\n"
	"seed = 7\n"
	"hp-rate = 2.5\n"
	"read-ahead = 6M\n"
	"read-ahead-start = 1M\n"
	"read-ahead-ramp = 90s\n"
	"\n"
	"[stream hd]\n"
	"count = 10\n"
	"rate = 3MiB/s\n"
	"io = 512K\n"
	"round = 1s\n"
	"reserved = yes\n"
	"reserve = 4MiB/s\n"
	"\n"
	"[stream rec]\n"
	"\tcount\t=\t2\t\n"
	"direction = write\n"
	"rate = 19.39Mbit\n"
	"io = 256K\n"
	"buffer = 2M\n"
	"place = 0.25\n"
	"\n"
	"[stream bulk]\n"
	"greedy = yes\n"
	"best-effort = yes\n"
	"io = 1M\n"
	"\n"
	"[be random4k]\n"
	"kind = random\n"
	"count = 3\n"
	"iops = 20\n"
	"\n"
	"[be streamer]\n"
	"kind = sequential\n"
	"count = 5\n"
	"io = 64K\n"
	"rate = 4MiB/s\n"
	"\n"
	"[be gone]\n"
	"kind = delete\n"
	"count = 2\n";

static void test_scenario_full_file(void **state)
{
	struct avfs_scenario s;
	char why[256] = "";
	const struct avfs_scn_stream *hd, *rec, *bulk;
	const struct avfs_scn_be *rnd, *str, *del;

	(void)state;
	assert_int_equal(parse(full, &s, why, sizeof(why)), 0);
	assert_string_equal(s.disk, "barracuda-500g");
	assert_true(s.size == 64ull << 30);
	assert_true(s.fill == 0.5);
	assert_true(s.fill_rate == 1e6);
	assert_int_equal(s.alloc, 1);
	assert_int_equal(s.block_shift, 20);
	assert_string_equal(s.policy, "cscan");
	assert_int_equal(s.sched.margin_ns, 300000000);
	assert_int_equal(s.sched.urgent_ns, 50000000);
	assert_int_equal(s.sched.chunk, 65536);
	assert_true(s.sched.jit);
	assert_int_equal(s.nset, 4);
	assert_int_equal(s.bw, AVFS_SCN_BW_AT_ONCE);
	assert_string_equal(s.predictor, "rotpred");
	assert_true(s.duration_s == 600);
	assert_int_equal(s.seed, 7);
	assert_true(s.hp_rate == 2.5);
	assert_true(s.read_ahead == 6u << 20 && s.read_ahead_start == 1u << 20);
	assert_true(s.read_ahead_ramp_s == 90);
	assert_int_equal(s.nstreams, 3);
	assert_int_equal(s.nbe, 3);
	hd = avfs_scenario_class(&s, "hd");
	rec = avfs_scenario_class(&s, "rec");
	bulk = avfs_scenario_class(&s, "bulk");
	assert_non_null(hd);
	assert_non_null(rec);
	assert_non_null(bulk);
	assert_int_equal(hd->count, 10);
	assert_true(hd->rate == 3 * MIB);
	assert_int_equal(hd->round_ns, 1000000000);
	assert_true(hd->reserved && hd->reserve == 4 * MIB && !hd->write);
	assert_true(hd->place < 0);
	assert_int_equal(rec->count, 2);
	assert_true(rec->write && !rec->reserved && !rec->best_effort);
	assert_true(rec->rate == 19.39e6 / 8);
	assert_int_equal(rec->io, 256 << 10);
	assert_int_equal(avfs_scn_buffer(rec), 2 << 20);
	assert_true(rec->place == 0.25);
	assert_true(bulk->greedy && bulk->best_effort && bulk->count == 1);
	rnd = avfs_scenario_be(&s, "random4k");
	str = avfs_scenario_be(&s, "streamer");
	del = avfs_scenario_be(&s, "gone");
	assert_non_null(rnd);
	assert_non_null(str);
	assert_non_null(del);
	assert_int_equal(rnd->kind, AVFS_SCN_BE_RANDOM);
	assert_int_equal(rnd->count, 3);
	assert_int_equal(avfs_scn_be_io(rnd), 4096);
	assert_true(rnd->iops == 20 && rnd->rate == 0);
	assert_int_equal(str->kind, AVFS_SCN_BE_SEQUENTIAL);
	assert_int_equal(avfs_scn_be_io(str), 65536);
	assert_true(str->rate == 4 * MIB);
	assert_int_equal(del->kind, AVFS_SCN_BE_DELETE);
	assert_int_equal(del->count, 2);
	assert_null(avfs_scenario_class(&s, "random4k"));
	avfs_scenario_free(&s);
}

/* The smallest file: one class, everything else the documented defaults. */
static void test_scenario_defaults(void **state)
{
	struct avfs_scenario s, d;
	char why[256] = "";

	(void)state;
	assert_int_equal(parse("[stream a]\nrate = 19.39Mbit\n", &s, why, sizeof(why)), 0);
	avfs_scenario_init(&d);
	assert_string_equal(s.disk, "avfs-250g");
	assert_true(s.size == 0 && s.fill == 0.8 && s.fill_rate == d.fill_rate);
	assert_int_equal(s.alloc, AVFS_ALLOC_ZRR_RUN);	/* as mkfs.avfs formats */
	assert_int_equal(s.block_shift, 22);
	assert_string_equal(s.policy, "tm");
	assert_memory_equal(&s.sched, &d.sched, sizeof(s.sched));
	assert_int_equal(s.bw, AVFS_SCN_BW_PARK);
	assert_true(s.duration_s == 3600 && s.seed == 1 && s.hp_rate == 0);
	assert_true(s.read_ahead == AVFS_SCN_UNSET && s.read_ahead_start == AVFS_SCN_UNSET);
	assert_true(s.read_ahead_ramp_s < 0);	/* the engine's defaults */
	assert_int_equal(s.nstreams, 1);
	assert_int_equal(s.streams[0].count, 1);
	assert_int_equal(s.streams[0].io, 512 << 10);
	assert_int_equal(avfs_scn_buffer(&s.streams[0]), 4 << 20);	/* 8 requests */
	assert_true(!s.streams[0].write && !s.streams[0].reserved && !s.streams[0].greedy &&
		    !s.streams[0].best_effort && s.streams[0].place < 0);
	avfs_scenario_free(&s);
}

/* read-ahead-ramp = 0 (off) reads back from its canonical form, "0s". */
static void test_scenario_ramp_off_round_trip(void **state)
{
	struct avfs_scenario a, b;
	char why[256] = "", buf[4096];

	(void)state;
	assert_int_equal(parse("read-ahead-ramp = 0\n[stream a]\nrate = 1MiB/s\n", &a, why,
			       sizeof(why)), 0);
	assert_true(a.read_ahead_ramp_s == 0);
	assert_true(avfs_scenario_format(&a, buf, sizeof(buf)) < sizeof(buf));
	assert_non_null(strstr(buf, "read-ahead-ramp = 0s"));
	assert_int_equal(parse(buf, &b, why, sizeof(why)), 0);
	assert_true(b.read_ahead_ramp_s == 0);
	avfs_scenario_free(&a);
	avfs_scenario_free(&b);
}

/* A duration of any number of seconds reads back from the canonical form as the same value
 * (fuzz_scenario found "1.2333...": its canonical "1.2333333333333334s" read back through
 * whole ns as 1.233333333); "500ms" and "2s" as before. */
static void test_scenario_duration_round_trip(void **state)
{
	static const char *const in[] = { "1.23333333333333333333", "1.2333333333333334s",
					  "500ms", "2s", "3600" };
	static const double want[] = { 1.2333333333333334, 1.2333333333333334, 0.5, 2, 3600 };

	(void)state;
	for (unsigned i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct avfs_scenario a, b;
		char text[256], canon[1024], why[256] = "";

		snprintf(text, sizeof(text), "duration = %s\n[stream a]\nrate = 19.39Mbit\n", in[i]);
		assert_int_equal(parse(text, &a, why, sizeof(why)), 0);
		assert_true(a.duration_s == want[i]);
		avfs_scenario_format(&a, canon, sizeof(canon));
		assert_int_equal(parse(canon, &b, why, sizeof(why)), 0);
		assert_true(b.duration_s == a.duration_s);
		avfs_scenario_free(&a);
		avfs_scenario_free(&b);
	}
}

/* Comments anywhere, blank lines, tabs, CRLF line ends, no newline at the end. */
static void test_scenario_spacing(void **state)
{
	static const char text[] = "  # a comment\r\n\r\n\tduration=\t60s # trailing\r\n"
				   "[ stream  x ]  # a header with spaces\r\nrate=1MiB/s";
	struct avfs_scenario s;
	char why[256] = "";

	(void)state;
	assert_int_equal(parse(text, &s, why, sizeof(why)), 0);
	assert_true(s.duration_s == 60);
	assert_non_null(avfs_scenario_class(&s, "x"));
	assert_true(s.streams[0].rate == MIB);
	avfs_scenario_free(&s);
}

/* papers/004 §3.3.1's rounds: a round's rate x round bytes in whole requests, two rounds of
 * buffer. */
static void test_scenario_per_round(void **state)
{
	struct avfs_scn_stream c = { .rate = 3 * MIB, .io = 512 << 10, .round_ns = 1000000000 };

	(void)state;
	assert_int_equal(avfs_scn_per_round(&c), 6);
	assert_int_equal(avfs_scn_buffer(&c), 12ull * (512 << 10));
	c.rate = MIB;
	assert_int_equal(avfs_scn_per_round(&c), 2);
	c.rate = 1.1 * MIB;	/* a partial request is a whole one */
	assert_int_equal(avfs_scn_per_round(&c), 3);
	c.round_ns = 0;
	assert_int_equal(avfs_scn_per_round(&c), 0);
}

/* The canonical form reads back to a scenario that prints the same, with the same values. */
static void test_scenario_canonical(void **state)
{
	struct avfs_scenario a, b;
	char why[256] = "";
	size_t n;
	char *t1, *t2;

	(void)state;
	assert_int_equal(parse(full, &a, why, sizeof(why)), 0);
	n = avfs_scenario_format(&a, NULL, 0);
	t1 = malloc(n + 1);
	assert_non_null(t1);
	assert_int_equal(avfs_scenario_format(&a, t1, n + 1), n);
	assert_int_equal(strlen(t1), n);
	assert_int_equal(parse(t1, &b, why, sizeof(why)), 0);
	t2 = malloc(n + 1);
	assert_non_null(t2);
	assert_int_equal(avfs_scenario_format(&b, t2, n + 1), n);
	assert_string_equal(t1, t2);
	assert_memory_equal(&a.sched, &b.sched, sizeof(a.sched));
	assert_int_equal(a.nstreams, b.nstreams);
	for (unsigned i = 0; i < a.nstreams; i++) {
		assert_true(a.streams[i].rate == b.streams[i].rate);
		assert_int_equal(avfs_scn_buffer(&a.streams[i]), avfs_scn_buffer(&b.streams[i]));
		assert_int_equal(a.streams[i].round_ns, b.streams[i].round_ns);
	}
	assert_true(a.fill_rate == b.fill_rate && a.duration_s == b.duration_s);
	assert_non_null(strstr(t1, "rate = 3MiB/s"));
	assert_non_null(strstr(t1, "rate = 19.39Mbit"));
	assert_non_null(strstr(t1, "duration = 600s"));
	assert_non_null(strstr(t1, "read-ahead-ramp = 90s"));
	assert_non_null(strstr(t1, "round = 1s"));
	/* a short buffer: as much as fits, NUL-terminated, the full length returned */
	{
		char small[16];

		assert_int_equal(avfs_scenario_format(&a, small, sizeof(small)), n);
		assert_int_equal(strlen(small), sizeof(small) - 1);
	}
	free(t1);
	free(t2);
	avfs_scenario_free(&a);
	avfs_scenario_free(&b);
}

/* Every kind of bad file: its line and field, and nothing changed. */
static void test_scenario_bad_files(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "disk = floppy\n[stream a]\nrate=1MiB/s", "t.scn:1: field 'disk': 'floppy': unknown model" },
		{ "fill = 0.99\n", "t.scn:1: field 'fill': '0.99': a number, 0 to 0.95" },
		{ "policy = elevator\n", "t.scn:1: field 'policy': 'elevator'" },
		{ "duration = 1h\n", "t.scn:1: field 'duration': '1h': seconds" },
		{ "seed = x\n", "t.scn:1: field 'seed'" },
		{ "block-size = 3M\n", "t.scn:1: field 'block-size': '3M': a power of two" },
		{ "margin = 5ms\n", "t.scn:1: field 'margin'" },
		{ "colour = red\n", "t.scn:1: field 'colour': unknown key (the top of a file" },
		{ "alloc = ext4\n", "t.scn:1: field 'alloc': 'ext4': one of zrr-run, zrr, contig" },
		{ "bw = later\n", "t.scn:1: field 'bw': 'later': one of park, at-once, uncharged" },
		{ "read-ahead-start = 65M\n", "t.scn:1: field 'read-ahead-start': '65M': a size up to 64M" },
		{ "read-ahead-ramp = 5ms\n", "t.scn:1: field 'read-ahead-ramp': '5ms': 0.01 to 600 s" },
		{ "margin = 100ms\nurgent = 200ms\n[stream a]\nrate=1MiB/s",
		  "t.scn:2: field 'urgent': urgent" },
		{ "[stream a]\nrate = 3\n", "t.scn:2: field 'rate': '3': say the unit" },
		{ "[stream a]\nrate = fast\n", "t.scn:2: field 'rate': 'fast': a rate with its unit" },
		{ "\n[stream a]\n", "t.scn:2: field 'rate': missing" },
		{ "[stream a]\nrate=1MiB/s\nio = 1000\n", "t.scn:3: field 'io': '1000': a size" },
		{ "[stream a]\nrate=1MiB/s\nio = 3M\n", "t.scn:3: field 'io': 3M does not divide" },
		{ "[stream a]\nrate=1MiB/s\nbuffer = 256K\n", "t.scn:3: field 'buffer': more than one" },
		{ "[stream a]\nrate=1MiB/s\nround = 1s\nbuffer = 4M\n",
		  "t.scn:3: field 'round': a class has a buffer or a round" },
		{ "[stream a]\nrate=1MiB/s\nround = 1s\ngreedy = yes\nreserved = yes\n",
		  "t.scn:4: field 'greedy': a round class" },
		{ "[stream a]\nrate=100MiB/s\nround = 10s\nio = 4K\n",
		  "t.scn:3: field 'round': more than 512 requests" },
		{ "[stream a]\nrate=1MiB/s\nreserve = 2MiB/s\n",
		  "t.scn:3: field 'reserve': only a reserved class" },
		{ "[stream a]\nrate=1MiB/s\nreserved = yes\nbest-effort = yes\n",
		  "t.scn:4: field 'best-effort': a reserved class" },
		{ "[stream a]\ngreedy = yes\n", "t.scn:2: field 'greedy': a greedy class without" },
		{ "[stream a]\nrate=1MiB/s\ndirection = sideways\n",
		  "t.scn:3: field 'direction': 'sideways': one of read, write" },
		{ "[stream a]\nrate=1MiB/s\nplace = 1\n", "t.scn:3: field 'place': '1': file, or" },
		{ "[stream a]\nrate=1MiB/s\nreserved = maybe\n", "t.scn:3: field 'reserved': 'maybe'" },
		{ "[stream a]\nrate=1MiB/s\ncount = 5000\n", "t.scn:3: field 'count': '5000'" },
		{ "[stream a]\nrate=1MiB/s\ncount=4000\n[stream b]\nrate=1MiB/s\ncount=100\n",
		  "t.scn:6: field 'count': more than 4096 streams" },
		{ "[stream a]\nrate=1MiB/s\nkind = random\n", "t.scn:3: field 'kind': unknown key" },
		{ "[stream a]\nrate=1MiB/s\nrate=2MiB/s\n", "t.scn:3: field 'rate': set twice (first "
		  "on line 2)" },
		{ "[stream a]\nrate =\n", "t.scn:2: field 'rate': no value" },
		{ "[stream a]\nrate 1MiB/s\n", "t.scn:2: 'rate 1MiB/s': not 'key = value'" },
		{ "[stream a]\n= 1\n", "t.scn:2: field '': not a key" },
		{ "[stream a]\nrate=1MiB/s\n[be a]\nkind=random\n", "t.scn:3: section '[be a]': the "
		  "name is taken (line 1)" },
		{ "[streams a]\n", "t.scn:1: section '[streams a]': a section is [stream NAME]" },
		{ "[stream]\n", "t.scn:1: section '[stream]': a name" },
		{ "[stream a.b]\n", "t.scn:1: section '[stream a.b]': a name" },
		{ "[stream a\n", "t.scn:1: '[stream a': a section header ends with ']'" },
		{ "[be x]\nkind=random\n[stream a]\nrate=1MiB/s\n",
		  "t.scn:3: section '[stream a]': [stream] sections come before" },
		{ "[be x]\ncount = 2\n", "t.scn:1: field 'kind': missing" },
		{ "[be x]\nkind = hoover\n", "t.scn:2: field 'kind': 'hoover': one of random" },
		{ "[be x]\nkind = delete\nrate = 1MiB/s\n", "t.scn:3: field 'rate': a delete generator" },
		{ "[be x]\nkind = random\nio = 8M\n", "t.scn:3: field 'io': more than the data block" },
		{ "[be x]\nkind = random\niops = -1\n", "t.scn:3: field 'iops': '-1'" },
		{ "[be x]\nkind = random\nplace = 0.5\n", "t.scn:3: field 'place': unknown key (a [be]" },
		{ "# nothing\n", "t.scn: nothing to run" },
	};
	char why[256];

	(void)state;
	for (size_t i = 0; i < N(bad); i++) {
		struct avfs_scenario s, before;

		memset(&s, 0x5a, sizeof(s));
		before = s;
		why[0] = 0;
		assert_int_equal(parse(bad[i].text, &s, why, sizeof(why)), -EINVAL);
		if (strncmp(why, bad[i].why, strlen(bad[i].why)))
			fail_msg("file %zu: got \"%s\", want \"%s...\"", i, why, bad[i].why);
		assert_memory_equal(&s, &before, sizeof(s));
	}
}

/* The command line's overrides: top-level keys, scheduler settings and a class's keys, each
 * value checked as in the file (a refused one leaves the scenario as it was), the checks
 * across keys once they are all in. */
static void test_scenario_set(void **state)
{
	struct avfs_scenario s;
	char why[256] = "", *before, *after;
	size_t n;

	(void)state;
	assert_int_equal(parse(full, &s, why, sizeof(why)), 0);
	assert_int_equal(avfs_scenario_set(&s, "duration", "30", why, sizeof(why)), 0);
	assert_true(s.duration_s == 30);
	assert_int_equal(avfs_scenario_set(&s, "margin", "400ms", why, sizeof(why)), 0);
	assert_int_equal(s.sched.margin_ns, 400000000);
	assert_int_equal(s.nset, 4);	/* replaced, not added (and moved last) */
	assert_string_equal(s.set[3].name, "margin");
	assert_int_equal(avfs_scenario_set(&s, "split", "100G", why, sizeof(why)), 0);
	assert_int_equal(s.nset, 5);
	assert_int_equal(avfs_scenario_set(&s, "hd.count", "24", why, sizeof(why)), 0);
	assert_int_equal(avfs_scenario_class(&s, "hd")->count, 24);
	assert_int_equal(avfs_scenario_set(&s, "streamer.count", "0", why, sizeof(why)), 0);
	assert_int_equal(avfs_scenario_be(&s, "streamer")->count, 0);

	n = avfs_scenario_format(&s, NULL, 0);
	before = malloc(n + 1);
	after = malloc(n + 1);
	assert_non_null(before);
	assert_non_null(after);
	avfs_scenario_format(&s, before, n + 1);
	assert_int_equal(avfs_scenario_set(&s, "hd.rate", "slow", why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "field 'hd.rate': 'slow': a rate with its unit, e.g. 19.39Mbit or "
			    "3MiB/s");
	assert_int_equal(avfs_scenario_set(&s, "nope.count", "1", why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "field 'nope.count': no [stream nope] or [be nope] section");
	assert_int_equal(avfs_scenario_set(&s, "hd.kind", "random", why, sizeof(why)), -EINVAL);
	assert_int_equal(avfs_scenario_set(&s, "colour", "red", why, sizeof(why)), -EINVAL);
	assert_int_equal(avfs_scenario_format(&s, after, n + 1), n);
	assert_string_equal(before, after);
	free(before);
	free(after);

	/* the checks across keys come once the changes are in, whatever their order */
	assert_int_equal(avfs_scenario_check(&s, why, sizeof(why)), 0);
	assert_int_equal(avfs_scenario_set(&s, "rec.buffer", "128K", why, sizeof(why)), 0);
	assert_int_equal(avfs_scenario_check(&s, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "field 'rec.buffer': more than one request (io 256K) and at most "
			    "1024 of them");
	assert_int_equal(avfs_scenario_set(&s, "rec.io", "64K", why, sizeof(why)), 0);
	assert_int_equal(avfs_scenario_check(&s, why, sizeof(why)), 0);
	assert_int_equal(avfs_scenario_set(&s, "hd.best-effort", "yes", why, sizeof(why)), 0);
	assert_int_equal(avfs_scenario_check(&s, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "field 'hd.best-effort': a reserved class is real time within "
			    "its reservation: not best effort");
	assert_int_equal(avfs_scenario_set(&s, "hd.reserved", "no", why, sizeof(why)), 0);
	assert_int_equal(avfs_scenario_check(&s, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "field 'hd.reserve': only a reserved class reserves (reserved = "
			    "yes)");
	assert_int_equal(avfs_scenario_set(&s, "hd.reserve", "0", why, sizeof(why)), 0);
	assert_int_equal(avfs_scenario_check(&s, why, sizeof(why)), 0);
	assert_int_equal(avfs_scenario_set(&s, "urgent", "1s", why, sizeof(why)), 0);
	assert_int_equal(avfs_scenario_check(&s, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "field 'urgent': "));
	assert_int_equal(avfs_scenario_set(&s, "margin", "2s", why, sizeof(why)), 0);
	assert_int_equal(avfs_scenario_check(&s, why, sizeof(why)), 0);
	avfs_scenario_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scenario_full_file),
		cmocka_unit_test(test_scenario_defaults),
		cmocka_unit_test(test_scenario_spacing),
		cmocka_unit_test(test_scenario_duration_round_trip),
		cmocka_unit_test(test_scenario_ramp_off_round_trip),
		cmocka_unit_test(test_scenario_per_round),
		cmocka_unit_test(test_scenario_canonical),
		cmocka_unit_test(test_scenario_bad_files),
		cmocka_unit_test(test_scenario_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
