/*
 * daemon_harness.c — an avfsd under test (see daemon_harness.h).
 */
#include "daemon_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char *avfsd_bin, *mkfs_bin, *fsck_bin;
char work_dir[64], img[96], mnt[96], sock[96], log_path[96];
pid_t daemon_pid = -1;
bool daemon_allow_other;
const char *daemon_config;

static struct { int passed, failed; } *counts;	/* shared with the test's children */

void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	__atomic_add_fetch(ok ? &counts->passed : &counts->failed, 1, __ATOMIC_SEQ_CST);
}

void note(const char *fmt, ...)
{
	va_list ap;

	fputs("  ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void path_of(char *p, size_t len, const char *name)
{
	snprintf(p, len, "%s/%s", mnt, name);
}

/* in a child: stdout and stderr to the log */
static void to_log(void)
{
	int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT, 0644);

	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
}

int run(int timeout_s, const char *const argv[])
{
	pid_t pid = fork();
	int st, i;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		to_log();
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (i = 0; i < timeout_s * 100; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

bool is_mounted(void)
{
	char line[512], want[128];
	FILE *f = fopen("/proc/mounts", "r");
	bool yes = false;

	if (!f)
		return false;
	snprintf(want, sizeof(want), " %s fuse", mnt);
	while (!yes && fgets(line, sizeof(line), f))
		yes = strstr(line, want) != NULL;
	fclose(f);
	return yes;
}

int daemon_wait(int timeout_s)
{
	int st, i;

	for (i = 0; i < timeout_s * 100; i++) {
		if (waitpid(daemon_pid, &st, WNOHANG) == daemon_pid) {
			daemon_pid = -1;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		usleep(10000);
	}
	return -1;
}

bool daemon_alive(void)
{
	int st;

	if (daemon_pid <= 0)
		return false;
	if (waitpid(daemon_pid, &st, WNOHANG) == daemon_pid) {
		note("avfsd died: %s %d", WIFSIGNALED(st) ? "signal" : "exit status",
		     WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		daemon_pid = -1;
		return false;
	}
	return true;
}

bool daemon_start(void)
{
	int i;

	daemon_pid = fork();
	if (daemon_pid < 0)
		return false;
	if (daemon_pid == 0) {
		const char *argv[10];
		int n = 0;

		to_log();
		argv[n++] = avfsd_bin;
		argv[n++] = "--foreground";
		if (daemon_allow_other)
			argv[n++] = "--allow-other";
		if (daemon_config) {
			argv[n++] = "--config";
			argv[n++] = daemon_config;
		}
		argv[n++] = "--socket";
		argv[n++] = sock;
		argv[n++] = img;
		argv[n++] = mnt;
		argv[n] = NULL;
		execv(avfsd_bin, (char *const *)argv);
		_exit(127);
	}
	for (i = 0; i < 1000; i++) {
		if (is_mounted())
			return true;
		if (waitpid(daemon_pid, NULL, WNOHANG) == daemon_pid) {
			daemon_pid = -1;
			return false;
		}
		usleep(10000);
	}
	return false;
}

bool daemon_stop(void)
{
	const char *const um[] = { "fusermount3", "-u", mnt, NULL };
	int rc;

	if (run(30, um) != 0)
		return false;
	rc = daemon_wait(30);
	if (rc != 0)
		note("avfsd exit status %d after unmount", rc);
	return rc == 0;
}

bool daemon_kill9(void)
{
	const char *const um[] = { "fusermount3", "-u", "-z", mnt, NULL };

	kill(daemon_pid, SIGKILL);
	if (daemon_wait(10) != 128 + SIGKILL)
		return false;
	run(10, um);
	return !is_mounted();
}

bool fsck_clean(void)
{
	const char *const argv[] = { fsck_bin, "-n", img, NULL };
	int rc = run(120, argv);

	if (rc != 0)
		note("fsck.avfs -n exit %d (output in the daemon log)", rc);
	return rc == 0;
}

void cleanup(void)
{
	const char *const um[] = { "fusermount3", "-u", "-z", mnt, NULL };
	char cmd[160];

	if (daemon_pid > 0) {
		kill(daemon_pid, SIGTERM);
		if (daemon_wait(10) < 0) {
			kill(daemon_pid, SIGKILL);
			daemon_wait(10);
		}
	}
	if (is_mounted())
		run(10, um);
	if (getenv("AVFS_KEEP")) {
		printf("kept %s\n", work_dir);
		return;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work_dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", work_dir);
}

void dump_log(void)
{
	char buf[4096];
	FILE *f = fopen(log_path, "r");
	size_t n;

	if (!f)
		return;
	fputs("---- daemon log ----\n", stdout);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(f);
}

int harness_finish(void)
{
	if (counts->failed)
		dump_log();
	cleanup();
	printf("%d passed, %d failed\n", counts->passed, counts->failed);
	return counts->failed ? 1 : 0;
}

int harness_setup(const char *name)
{
	avfsd_bin = getenv("AVFSD");
	mkfs_bin = getenv("MKFS");
	fsck_bin = getenv("FSCK");
	if (!avfsd_bin || !mkfs_bin || !fsck_bin) {
		fprintf(stderr, "set AVFSD, MKFS and FSCK to the built binaries\n");
		return 1;
	}
	if (geteuid() != 0) {
		printf("SKIP: needs root (FUSE mounts)\n");
		return 77;
	}
	if (access("/dev/fuse", R_OK | W_OK)) {
		printf("SKIP: no /dev/fuse\n");
		return 77;
	}
	counts = mmap(NULL, sizeof(*counts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	if (counts == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	snprintf(work_dir, sizeof(work_dir), "/var/tmp/avfs-%s-XXXXXX", name);
	if (!mkdtemp(work_dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(img, sizeof(img), "%s/img", work_dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", work_dir);
	snprintf(sock, sizeof(sock), "%s/sock", work_dir);
	snprintf(log_path, sizeof(log_path), "%s/avfsd.log", work_dir);
	mkdir(mnt, 0755);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

bool harness_mkfs(void)
{
	const char *const argv[] = { mkfs_bin, "--size", "2G", "--block-size", "1M", img, NULL };

	return run(60, argv) == 0;
}
