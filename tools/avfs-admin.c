/*
 * avfs-admin — the operator's command line (SPEC §10): status, streams, reserve, release,
 * stats and trace talk to a running avfsd over its client socket (proto/proto.h); plot and
 * profile work alone (tools/admin_plot.c, tools/admin_profile.c). Human output is aligned
 * tables; --json prints the daemon's JSON as it is (docs/ADMIN.md).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "client.h"
#include "jsonout.h"
#include "units.h"

static const char *sock_opt;
static uint64_t next_tag = 1;
static struct avfs_proto_rx rx;	/* the connection's replies (one connection per run) */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: avfs-admin [--socket PATH] COMMAND [ARGS]\n"
		"       avfs-admin --version | --help\n"
		"  status [--json]            the daemon, its device and its admission load\n"
		"  streams [--json]           every reservation\n"
		"  reserve PATH --rate R --buffer B [--read|--write] [--uid U] [--io S]\n"
		"                             a detached reservation on PATH (until release):\n"
		"                             a file, or a directory (the files in it, present\n"
		"                             and future); its FUSE and libavio I/O is charged\n"
		"                             to it (--uid: of processes of uid U only);\n"
		"                             R in bytes/s (k, M, G: powers of 1000; or 19.39Mbit),\n"
		"                             B and S in bytes (K, M, G: powers of 1024)\n"
		"  release ID                 end reservation ID\n"
		"  stats [--json|--prometheus]  QoS statistics: margins, misses, utilization,\n"
		"                             seeks; --prometheus: Prometheus's text format\n"
		"  reset                      begin a new measurement of the statistics, root\n"
		"  trace --duration S --out FILE   record the request trace (docs/TRACE.md), root\n"
		"  plot TRACE --out FILE.svg  draw a trace\n"
		"  profile DEVICE             measure a disk (sim:MODEL for a simulated one)\n"
		"  quota DIR [SIZE|none]      DIR's space quota (its subtree; EDQUOT past it), root\n"
		"  retention DIR [--high H --low L | --off]\n"
		"                             past H %% of DIR's quota (or of the file system) the\n"
		"                             oldest unprotected files below DIR are deleted down\n"
		"                             to L %%, root\n"
		"The socket: --socket, else $AVFS_SOCKET, else the only one under /run/avfs; for\n"
		"reserve, the socket of FILE's mount. Exit status: 0 done, 1 refused or failed,\n"
		"2 bad usage.\n");
}

/* The largest --buffer taken (10^13 bytes), against typing mistakes: what it may have is the
 * daemon's to say. */
#define MAX_BYTES 10000000000000ull

/* ---- the connection ---- */

static int find_socket(const char *file, char *path, size_t len)
{
	const char *env = getenv("AVFS_SOCKET");
	glob_t g;

	if (sock_opt) {
		snprintf(path, len, "%s", sock_opt);
		return 0;
	}
	if (file) {
		int err = avfs_proto_socket_file(file, path, len);

		if (!err)
			return 0;
		fprintf(stderr, "avfs-admin: %s is not on an AVFS mount (%s): name a file on "
			"the mount of an avfsd\n", file, err == -ENODATA || err == -EOPNOTSUPP ?
			"it carries no user.avfs.socket attribute" : strerror(-err));
		return -ENOENT;
	}
	if (env && *env) {
		snprintf(path, len, "%s", env);
		return 0;
	}
	if (glob("/run/avfs/*.sock", 0, NULL, &g) == 0 && g.gl_pathc == 1) {
		snprintf(path, len, "%s", g.gl_pathv[0]);
		globfree(&g);
		return 0;
	}
	fprintf(stderr, "avfs-admin: %s; say --socket PATH\n", g.gl_pathc > 1 ?
		"more than one avfsd runs (several sockets under /run/avfs)" :
		"no avfsd socket under /run/avfs");
	globfree(&g);
	return -ENOENT;
}

/*
 * One round trip: the reply's fixed struct into rep (rlen bytes) and, if text is not NULL,
 * the rest of the reply (malloc'd, NUL-terminated) into *text. 0 or -errno, said on stderr.
 */
static int call(int s, uint16_t type, const void *m, size_t mlen, void *rep, size_t rlen,
		void **text, size_t *tlen)
{
	uint64_t tag = next_tag++;
	int err = avfs_proto_send(s, type, tag, m, mlen, -1, AVFS_PROTO_REPLY_MS);

	if (!err)
		err = avfs_proto_wait(s, &rx, type, tag, rep, rlen, text, tlen, AVFS_PROTO_REPLY_MS);
	if (err)
		fprintf(stderr, "avfs-admin: the daemon did not answer (%s)\n", strerror(-err));
	return err;
}

static int connect_daemon(const char *file)
{
	struct avfs_msg_hello_reply hello;
	char path[AVFS_PROTO_PATH_MAX];
	int s;

	if (find_socket(file, path, sizeof(path)))
		return -1;
	s = avfs_proto_connect(path, &rx, &hello, AVFS_PROTO_REPLY_MS);
	if (s == -EPROTO)
		fprintf(stderr, "avfs-admin: %s does not speak protocol %u\n", path,
			AVFS_PROTO_VERSION);
	else if (s < 0)
		fprintf(stderr, "avfs-admin: cannot connect to %s: %s\n", path, strerror(-s));
	return s < 0 ? -1 : s;
}

/* ---- status, streams, stats ---- */

static json_object *admin_json(int s, const char *cmd)
{
	struct avfs_msg_admin_reply r;
	json_object *o = NULL;
	void *text = NULL;
	size_t len = 0;

	if (call(s, AVFS_MSG_ADMIN, cmd, strlen(cmd), &r, sizeof(r), &text, &len))
		return NULL;
	if (!r.res)
		o = json_tokener_parse(text);
	else
		fprintf(stderr, "avfs-admin: %s: %s\n", cmd, strerror(-r.res));
	free(text);
	return o;
}

static void print_disk(json_object *d)
{
	json_object *wc = json_object_object_get(d, "write_cache");

	printf("backend       %s\n", avfs_json_str(d, "backend"));
	if (*avfs_json_str(d, "transport")) {
		printf("identity      %s %s %s, firmware %s, serial '%s'\n",
		       avfs_json_str(d, "transport"), avfs_json_str(d, "vendor"),
		       avfs_json_str(d, "product"), avfs_json_str(d, "firmware"),
		       avfs_json_str(d, "serial"));
		if (*avfs_json_str(d, "lba_format"))
			printf("lba format    %s\n", avfs_json_str(d, "lba_format"));
		printf("write cache   %s\n", !wc ? "unknown" :
		       json_object_get_boolean(wc) ? "on" : "off");
		if (avfs_json_num(d, "max_transfer") > 0)
			printf("max transfer  %.0f KiB\n", avfs_json_num(d, "max_transfer") / 1024);
	}
	printf("disk          %.1f GB, %.0f-byte blocks, %s, SEEK %s\n",
	       avfs_json_num(d, "bytes") / 1e9, avfs_json_num(d, "logical_block"),
	       json_object_get_boolean(json_object_object_get(d, "rotational")) ?
	       "rotational" : "non-rotational",
	       json_object_get_boolean(json_object_object_get(d, "seek")) ? "yes" : "no");
	printf("mixer mode    %s, %.0f on the device, chunk %.0f, jit %s, split %.0f\n",
	       avfs_json_str(d, "mode"), avfs_json_num(d, "depth"), avfs_json_num(d, "chunk"),
	       json_object_get_boolean(json_object_object_get(d, "jit")) ? "on" : "off",
	       avfs_json_num(d, "split"));
}

static void print_streams(json_object *arr)
{
	size_t n = arr ? json_object_array_length(arr) : 0;

	if (!n) {
		printf("no reservations\n");
		return;
	}
	printf("%4s %6s %7s %10s %6s %3s %9s %9s %8s %6s %6s %9s %6s %9s %9s %9s\n", "id", "uid",
	       "pid", "inode", "covers", "dir", "rate MB/s", "buf MiB", "period", "util", "padded",
	       "requests", "misses", "p01 ms", "p50 ms", "held MiB");
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(arr, i);
		bool det = json_object_get_boolean(json_object_object_get(s, "detached"));

		const char *pid = avfs_json_str(s, "pid"), *ino = avfs_json_str(s, "inode");
		const char *only = avfs_json_str(s, "covers_uid");
		char where[24], covers[16];

		/* a directory's reservation: its inode with a slash (it covers the files in it) */
		snprintf(where, sizeof(where), "%s%s", *ino ? ino : "-",
			 *ino && json_object_get_boolean(json_object_object_get(s, "directory")) ?
			 "/" : "");
		snprintf(covers, sizeof(covers), "%s", *only ? only : "all");

		/* another user's reservation shows no pid or inode unless the asker is root or
		 * of the daemon's admin group */
		printf("%4.0f %6.0f %7s %10s %6s %3s %9.3f %9.2f %6.2f s %5.1f%% %5.1f%% %9.0f %6.0f "
		       "%9.1f %9.1f %9.2f\n", avfs_json_num(s, "id"), avfs_json_num(s, "uid"),
		       det || !*pid ? "-" : pid, where, covers,
		       !strcmp(avfs_json_str(s, "direction"), "write") ? "w" : "r",
		       avfs_json_num(s, "rate") / 1e6, avfs_json_num(s, "buffer") / (1 << 20),
		       avfs_json_num(s, "period_ms") / 1e3, 100 * avfs_json_num(s, "utilization"),
		       100 * avfs_json_num(s, "utilization_padded"), avfs_json_num(s, "requests"),
		       avfs_json_num(s, "misses"), avfs_json_num(s, "margin_ms.p01"),
		       avfs_json_num(s, "margin_ms.p50"), avfs_json_num(s, "buffered") / (1 << 20));
	}
}

static int cmd_query(int argc, char **argv)
{
	bool json = argc == 2 && !strcmp(argv[1], "--json");
	bool prom = argc == 2 && !strcmp(argv[1], "--prometheus") && !strcmp(argv[0], "stats");
	json_object *o;
	int s, ret = 0;

	if (argc > 2 || (argc == 2 && !json && !prom)) {
		fprintf(stderr, "usage: avfs-admin %s [--json%s]\n", argv[0],
			strcmp(argv[0], "stats") ? "" : "|--prometheus");
		return 2;
	}
	if (!strcmp(argv[0], "reset") && argc != 1) {
		fprintf(stderr, "usage: avfs-admin reset\n");
		return 2;
	}
	s = connect_daemon(NULL);
	if (s < 0)
		return 1;
	o = admin_json(s, argv[0]);
	close(s);
	if (!o)
		return 1;
	if (json) {
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								  JSON_C_TO_STRING_SPACED));
	} else if (prom) {
		ret = admin_prometheus(stdout, o);
		if (ret)
			fprintf(stderr, "avfs-admin: stats --prometheus: cannot write the output\n");
	} else if (!strcmp(argv[0], "status")) {
		printf("device        %s\n", avfs_json_str(o, "device"));
		printf("mountpoint    %s\n", avfs_json_str(o, "mountpoint"));
		printf("socket        %s\n", avfs_json_str(o, "socket"));
		printf("uptime        %.0f s\n", avfs_json_num(o, "uptime_s"));
		printf("block size    %.0f KiB\n", avfs_json_num(o, "block_size") / 1024);
		if (*avfs_json_str(o, "failure"))
			printf("state         read-only: %s (remount after fsck.avfs)\n",
			       avfs_json_str(o, "failure"));
		else
			printf("state         %s\n", json_object_get_boolean(
			       json_object_object_get(o, "read_only")) ? "read-only" : "read-write");
		print_disk(json_object_object_get(o, "disk"));
		printf("scheduler     %s\n", avfs_json_str(o, "policy"));
		printf("clients       %.0f\n", avfs_json_num(o, "clients"));
		printf("streams       %.0f\n", avfs_json_num(o, "streams"));
		printf("admission     %s test: load %.1f %% of %.1f %%, left %.1f %%, best-effort "
		       "floor %.1f %%, isolation %s\n",
		       avfs_json_str(o, "admission.test"),
		       100 * avfs_json_num(o, "admission.load"),
		       100 * avfs_json_num(o, "admission.limit"),
		       100 * avfs_json_num(o, "admission.left"),
		       100 * avfs_json_num(o, "admission.be_floor"),
		       json_object_get_boolean(avfs_json_get(o, "admission.isolation")) ?
		       "on" : "off");
		if (avfs_json_num(o, "admission.sweep.round_ms") > 0)
			printf("              rounds of %.0f ms (gathered %.0f ms), %.1f positionings/s "
			       "(%.1f visits/s by detour, %.1f requests/s at once): seek %.1f %%, "
			       "rotation %.1f %%, transfer %.1f %%, write turns %.1f %%, margin "
			       "%.1f %%\n",
			       avfs_json_num(o, "admission.sweep.round_ms"),
			       avfs_json_num(o, "admission.sweep.gather_ms"),
			       avfs_json_num(o, "admission.sweep.visits_per_s"),
			       avfs_json_num(o, "admission.sweep.detours_per_s"),
			       avfs_json_num(o, "admission.sweep.urgent_per_s"),
			       100 * avfs_json_num(o, "admission.sweep.seek"),
			       100 * avfs_json_num(o, "admission.sweep.rotation"),
			       100 * avfs_json_num(o, "admission.sweep.transfer"),
			       100 * avfs_json_num(o, "admission.sweep.write_turns"),
			       100 * (avfs_json_num(o, "admission.sweep.margin") +
				      avfs_json_num(o, "admission.sweep.best_effort")));
	} else if (!strcmp(argv[0], "streams")) {
		print_streams(json_object_object_get(o, "streams"));
	} else if (!strcmp(argv[0], "reset")) {
		printf("statistics reset: a new measurement begins\n");
	} else {
		json_object *bins = avfs_json_get(o, "seek_distance.bins_gb");
		json_object *counts = avfs_json_get(o, "seek_distance.counts");

		printf("uptime            %.1f s\n", avfs_json_num(o, "uptime_s"));
		printf("disk utilization  %.1f %%\n", 100 * avfs_json_num(o, "disk_utilization"));
		printf("RT requests       %.0f, misses %.0f (P0 %.4f), -ETIME %.0f\n",
		       avfs_json_num(o, "rt.requests"), avfs_json_num(o, "rt.misses"),
		       avfs_json_num(o, "rt.p0"), avfs_json_num(o, "rt.etime"));
		printf("margin            min %.1f ms, p0.1%% %.1f ms, p1%% %.1f ms, p50 %.1f ms\n",
		       avfs_json_num(o, "rt.margin_ms.min"), avfs_json_num(o, "rt.margin_ms.p001"),
		       avfs_json_num(o, "rt.margin_ms.p01"), avfs_json_num(o, "rt.margin_ms.p50"));
		printf("best effort       %.0f requests, %.1f MB, %.2f Mbit/s\n",
		       avfs_json_num(o, "be.requests"), avfs_json_num(o, "be.bytes") / 1e6,
		       avfs_json_num(o, "be.mbps"));
		printf("queue             %.0f pending (max %.0f), %.0f on the device\n",
		       avfs_json_num(o, "queue.pending"), avfs_json_num(o, "queue.max_pending"),
		       avfs_json_num(o, "queue.inflight"));
		printf("model             rotation %.2f ms, seek %.2f ms, %.1f..%.1f MB/s, %.1f GB\n",
		       avfs_json_num(o, "model.rotation_ms"), avfs_json_num(o, "model.seek_avg_ms"),
		       avfs_json_num(o, "model.rate_inner_mbs"),
		       avfs_json_num(o, "model.rate_outer_mbs"),
		       avfs_json_num(o, "model.bytes") / 1e9);
		printf("mixer             %s, margin %.0f ms, urgent %.0f ms, chunk %.0f\n",
		       avfs_json_str(o, "mixer.policy"), avfs_json_num(o, "mixer.margin_ms"),
		       avfs_json_num(o, "mixer.urgent_ms"), avfs_json_num(o, "mixer.chunk"));
		printf("semi-preemptive   %.0f chunk commands, %.0f JIT waits (%.1f ms), %.0f seek "
		       "splits; %.0f of %.0f judged commands lost a turn, transport %.2f ms\n",
		       avfs_json_num(o, "mixer.chunks"), avfs_json_num(o, "mixer.jit_waits"),
		       avfs_json_num(o, "mixer.jit_wait_ms"), avfs_json_num(o, "mixer.seek_splits"),
		       avfs_json_num(o, "mixer.jit_lost_turns"),
		       avfs_json_num(o, "mixer.jit_judged"), avfs_json_num(o, "mixer.jit_slip_ms"));
		printf("seek distance GB ");
		for (size_t i = 0; bins && i < json_object_array_length(bins); i++)
			printf(" %s:%s", json_object_get_string(json_object_array_get_idx(bins, i)),
			       json_object_get_string(json_object_array_get_idx(counts, i)));
		printf("  (%.1f %% below 5 GB)\n",
		       100 * avfs_json_num(o, "seek_distance.frac_below_5"));
		if (json_object_object_get(o, "retention"))
			printf("retention         %.0f files deleted (%.1f MB) in %.0f passes, %.0f "
			       "failed; %.0f EDQUOT\n", avfs_json_num(o, "retention.deleted"),
			       avfs_json_num(o, "retention.deleted_bytes") / 1e6,
			       avfs_json_num(o, "retention.passes"),
			       avfs_json_num(o, "retention.failed"),
			       avfs_json_num(o, "retention.edquot"));
		printf("\n");
		print_streams(json_object_object_get(o, "streams"));
	}
	json_object_put(o);
	return ret;
}

/* ---- reserve, release ---- */

static int cmd_reserve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rate", required_argument, NULL, 'r' },
		{ "buffer", required_argument, NULL, 'b' },
		{ "io", required_argument, NULL, 'i' },
		{ "read", no_argument, NULL, 'R' },
		{ "write", no_argument, NULL, 'W' },
		{ "uid", required_argument, NULL, 'u' },
		{ NULL, 0, NULL, 0 },
	};
	struct avfs_msg_reserve m = { 0 };
	struct avfs_msg_reserve_reply r;
	struct {
		struct avfs_msg_open_path m;
		char path[AVFS_PROTO_PATH_LEN + 1];
	} om = { 0 };	/* the file by its path: the daemon checks each directory on the way */
	struct avfs_msg_open_reply orp;
	uint64_t rate = 0, buffer = 0, io = 0;
	const char *file, *dir = NULL;
	struct stat st;
	double v;
	int c, s;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (avfs_parse_rate(optarg, false, &v) || v < 1 || v > 1e12) {
				fprintf(stderr, "avfs-admin: --rate %s: not a rate\n", optarg);
				return 2;
			}
			rate = (uint64_t)v;
			break;
		case 'b':
			if (avfs_parse_size(optarg, &buffer) || !buffer || buffer > MAX_BYTES) {
				fprintf(stderr, "avfs-admin: --buffer %s: not a size\n", optarg);
				return 2;
			}
			break;
		case 'i':
			if (avfs_parse_size(optarg, &io) || !io || io > UINT32_MAX) {
				fprintf(stderr, "avfs-admin: --io %s: not a size\n", optarg);
				return 2;
			}
			break;
		case 'u': {
			uint64_t u;

			if (avfs_parse_uint(optarg, &u) || u >= UINT32_MAX) {
				fprintf(stderr, "avfs-admin: --uid %s: not a uid\n", optarg);
				return 2;
			}
			m.flags |= AVFS_RESERVE_UID;
			m.uid = (uint32_t)u;
			break;
		}
		case 'R':
		case 'W':
			if (dir && strcmp(dir, c == 'W' ? "--write" : "--read")) {
				fprintf(stderr, "avfs-admin: reserve: --read and --write exclude each "
					"other: a reservation is for reading or for writing\n");
				return 2;
			}
			dir = c == 'W' ? "--write" : "--read";
			m.write = c == 'W';
			break;
		default: return 2;
		}
	}
	if (optind + 1 != argc || !rate || !buffer) {
		fprintf(stderr, "usage: avfs-admin reserve PATH --rate R --buffer B [--read|--write] "
			"[--uid U] [--io S]\n");
		return 2;
	}
	file = argv[optind];
	{
		char *real = realpath(file, NULL);

		if (!real || stat(real, &st) || strlen(real) > AVFS_PROTO_PATH_LEN) {
			fprintf(stderr, "avfs-admin: %s: %s\n", file,
				real ? "path too long" : strerror(errno));
			free(real);
			return 1;
		}
		strcpy(om.path, real);
		free(real);
	}
	s = connect_daemon(file);
	if (s < 0)
		return 1;
	om.m.dev = st.st_dev;
	om.m.ino = st.st_ino;
	/* a directory: its files' FUSE I/O, present and future */
	om.m.access = (m.write ? AVFS_OPEN_WRITE : AVFS_OPEN_READ) |
		      (S_ISDIR(st.st_mode) ? AVFS_OPEN_DIR : 0);
	if (call(s, AVFS_MSG_OPEN_PATH, &om, sizeof(om.m) + strlen(om.path), &orp, sizeof(orp),
		 NULL, NULL)) {
		close(s);
		return 1;
	}
	if (orp.res == -EXDEV) {
		fprintf(stderr, "avfs-admin: %s is not on the file system this avfsd serves: name a "
			"file on its mount (or leave --socket out: the file's own mount names its "
			"daemon)\n", file);
		close(s);
		return 1;
	}
	if (orp.res) {
		fprintf(stderr, "avfs-admin: %s: %s\n", file, strerror(-orp.res));
		close(s);
		return 1;
	}
	m.handle = orp.handle;
	m.flags |= AVFS_RESERVE_DETACHED;
	m.rate = rate;
	m.buffer = buffer;
	m.io = (uint32_t)io;
	if (call(s, AVFS_MSG_RESERVE, &m, sizeof(m), &r, sizeof(r), NULL, NULL)) {
		close(s);
		return 1;
	}
	close(s);
	r.why[sizeof(r.why) - 1] = 0;
	if (r.res) {
		fprintf(stderr, "avfs-admin: refused (%s): %s\n", strerror(-r.res), r.why);
		if (r.res == -EBUSY || r.res == -EDQUOT) {
			fprintf(stderr, "  left: %.1f %% of disk time; ", r.left_util_ppm / 1e4);
			if (r.left_rate)
				fprintf(stderr, "at most %.3f MB/s for a stream like this one",
					(double)r.left_rate / 1e6);
			else
				fprintf(stderr, "no rate for a stream like this one (buffer, request "
					"size, direction)");
			if (r.quota_rate != UINT64_MAX)
				fprintf(stderr, "; quota: %.3f MB/s", (double)r.quota_rate / 1e6);
			if (r.quota_streams != UINT32_MAX)
				fprintf(stderr, ", %u streams", r.quota_streams);
			fprintf(stderr, "\n");
		}
		return 1;
	}
	printf("reservation %llu: %s %s%s at %.3f MB/s, buffer %.2f MiB; %.1f %% of disk time "
	       "left\n", (unsigned long long)r.id, m.write ? "write" : "read",
	       S_ISDIR(st.st_mode) ? "the files of " : "", file,
	       (double)rate / 1e6, (double)buffer / (1 << 20), r.left_util_ppm / 1e4);
	return 0;
}

static int cmd_release(int argc, char **argv)
{
	struct avfs_msg_release m = { .handle = AVFS_RELEASE_BY_ID };
	struct avfs_msg_release_reply r;
	int s;

	if (argc != 2 || avfs_parse_uint(argv[1], &m.id) || !m.id) {
		if (argc == 2)
			fprintf(stderr, "avfs-admin: release: '%s' is not a reservation id (a "
				"positive number)\n", argv[1]);
		fprintf(stderr, "usage: avfs-admin release ID (a number from `avfs-admin streams`)\n");
		return 2;
	}
	s = connect_daemon(NULL);
	if (s < 0)
		return 1;
	if (call(s, AVFS_MSG_RELEASE, &m, sizeof(m), &r, sizeof(r), NULL, NULL)) {
		close(s);
		return 1;
	}
	close(s);
	if (r.res) {
		fprintf(stderr, "avfs-admin: release %llu: %s\n", (unsigned long long)m.id,
			r.res == -ENOENT ? "no such reservation" : strerror(-r.res));
		return 1;
	}
	printf("reservation %llu released\n", (unsigned long long)m.id);
	return 0;
}

/* ---- trace ---- */

static int cmd_trace(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "duration", required_argument, NULL, 'd' },
		{ "out", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	struct avfs_msg_trace m = { 0 };
	const char *out = NULL;
	char tmp[4096];
	uint64_t tag = next_tag++, lines = 0;
	double secs = 0;
	bool done = false;
	FILE *f;
	int c, s, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		int64_t ns;

		switch (c) {
		case 'd':	/* seconds, as every tool's --duration, or a time with its unit */
			if (avfs_parse_number(optarg, &secs))
				secs = avfs_parse_time(optarg, &ns) ? -1 : (double)ns / 1e9;
			if (!(secs >= 0.001 && secs <= 86400)) {
				fprintf(stderr, "avfs-admin: --duration %s: seconds, 0.001 to 86400\n",
					optarg);
				return 2;
			}
			break;
		case 'o': out = optarg; break;
		default: return 2;
		}
	}
	if (optind != argc || !out || secs <= 0) {
		fprintf(stderr, "usage: avfs-admin trace --duration S --out FILE\n");
		return 2;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", out, (int)getpid());
	s = connect_daemon(NULL);
	if (s < 0)
		return 1;
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "avfs-admin: %s: %s\n", tmp, strerror(errno));
		close(s);
		return 1;
	}
	m.duration_ns = (uint64_t)(secs * 1e9);
	err = avfs_proto_send(s, AVFS_MSG_TRACE, tag, &m, sizeof(m), -1, AVFS_PROTO_REPLY_MS);
	while (!err && !done) {
		struct avfs_msg_trace_reply r;
		size_t len = 0;
		void *text = NULL;

		/* the daemon sends lines as they gather, and the last reply after the duration */
		err = avfs_proto_wait(s, &rx, AVFS_MSG_TRACE, tag, &r, sizeof(r), &text, &len,
				      (int)(secs * 1000) + AVFS_PROTO_REPLY_MS);
		if (err)
			break;
		if (r.res) {
			fprintf(stderr, "avfs-admin: trace: %s\n", r.res == -EPERM ?
				"only root may trace (it shows every user's requests)" :
				strerror(-r.res));
			free(text);
			fclose(f);
			unlink(tmp);
			close(s);
			return 1;
		}
		fwrite(text, 1, len, f);
		for (size_t i = 0; i < len; i++)
			lines += ((const char *)text)[i] == '\n';
		done = r.done;
		free(text);
	}
	close(s);
	if (!done || fclose(f) || rename(tmp, out)) {
		fprintf(stderr, "avfs-admin: trace %s: %s\n", out,
			done ? strerror(errno) : "the daemon stopped answering");
		if (done)
			unlink(tmp);
		else
			fclose(f), unlink(tmp);
		return 1;
	}
	printf("%s: %llu requests in %.1f s\n", out, (unsigned long long)(lines ? lines - 1 : 0),
	       secs);
	return 0;
}

int main(int argc, char **argv)
{
	int i = 1;

	if (argc > 2 && !strcmp(argv[1], "--socket")) {
		sock_opt = argv[2];
		i = 3;
	} else if (argc > 1 && !strncmp(argv[1], "--socket=", 9)) {
		sock_opt = argv[1] + 9;
		i = 2;
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	argc -= i;
	argv += i;
	if (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help") || !strcmp(argv[0], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[0], "-V") || !strcmp(argv[0], "--version")) {
		printf("avfs-admin %s\n", AVFS_VERSION);
		return 0;
	}
	if (!strcmp(argv[0], "status") || !strcmp(argv[0], "streams") || !strcmp(argv[0], "stats") ||
	    !strcmp(argv[0], "reset"))
		return cmd_query(argc, argv);
	if (!strcmp(argv[0], "reserve"))
		return cmd_reserve(argc, argv);
	if (!strcmp(argv[0], "release"))
		return cmd_release(argc, argv);
	if (!strcmp(argv[0], "trace"))
		return cmd_trace(argc, argv);
	if (!strcmp(argv[0], "plot"))
		return admin_plot(argc, argv);
	if (!strcmp(argv[0], "profile"))
		return admin_profile(argc, argv);
	if (!strcmp(argv[0], "quota") || !strcmp(argv[0], "retention"))
		return admin_space(argc, argv);
	fprintf(stderr, "avfs-admin: unknown command '%s'\n", argv[0]);
	usage(stderr);
	return 2;
}
