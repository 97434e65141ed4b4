/*
 * units.c — sizes, rates, times and scaled numbers read from text (units.h). One number
 * scanner under all of them, so that "1.5", ".5" and "1e6" mean the same everywhere; each
 * kind adds only its suffixes. No I/O, no allocation; errno is used and left as strtod sets it.
 */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TWO_64 18446744073709551616.0	/* 2^64: the first double beyond UINT64_MAX */
#define TWO_63 9223372036854775808.0	/* 2^63: the first double beyond INT64_MAX */

struct num {
	double v;	/* the value */
	bool whole;	/* written as digits alone ... */
	bool fits;	/* ... and within uint64_t: then u is exact */
	uint64_t u;
};

/* The unsigned decimal number at the start of s (units.h): its value in *n and what follows
 * it in *end. 0, -EINVAL (also for NULL) or -ERANGE (infinite as a double). */
static int scan(const char *s, struct num *n, const char **end)
{
	const char *p = s;
	size_t digits = 0;
	char *e;

	if (!s)
		return -EINVAL;
	while (isdigit((unsigned char)*p))
		p++, digits++;
	n->whole = digits && *p != '.';
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			digits++;
	if (!digits)
		return -EINVAL;	/* also a sign, a space, "inf", "nan" */
	if (*p == 'e' || *p == 'E') {	/* an exponent only when digits follow: "5e" is 5, "e" */
		const char *q = p + 1 + (p[1] == '+' || p[1] == '-');

		if (isdigit((unsigned char)*q)) {
			while (isdigit((unsigned char)*q))
				q++;
			p = q;
			n->whole = false;
		}
	}
	errno = 0;
	n->v = strtod(s, &e);
	if (e != p)
		return -EINVAL;	/* strtod read more (hex) or less than the grammar */
	if (!isfinite(n->v))
		return -ERANGE;
	n->fits = false;
	if (n->whole) {
		errno = 0;
		n->u = strtoull(s, &e, 10);
		n->fits = errno != ERANGE;
	}
	*end = p;
	return 0;
}

/* The power of a multiplier letter K, M, G, T (either case): 1 .. 4, or 0 for none. */
static unsigned power(char c)
{
	switch (c) {
	case 'k': case 'K': return 1;
	case 'm': case 'M': return 2;
	case 'g': case 'G': return 3;
	case 't': case 'T': return 4;
	default: return 0;
	}
}

static double ipow(double base, unsigned n)
{
	double v = 1;

	while (n--)
		v *= base;
	return v;
}

int avfs_parse_uint(const char *s, uint64_t *out)
{
	char *end;
	uint64_t v;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;	/* strtoull would take a sign or a space */
	errno = 0;
	v = strtoull(s, &end, 0);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	*out = v;
	return 0;
}

/* scan(), then an optional multiplier letter (power()), its power in *pw (0: none). */
static int scan_scaled(const char *s, struct num *n, unsigned *pw, const char **end)
{
	int err = scan(s, n, end);

	if (err)
		return err;
	*pw = power(**end);
	*end += *pw != 0;
	return 0;
}

/* *out = v, or -ERANGE when v is not finite. */
static int set_finite(double v, double *out)
{
	if (!isfinite(v))
		return -ERANGE;
	*out = v;
	return 0;
}

int avfs_parse_number(const char *s, double *out)
{
	struct num n;
	const char *p;
	int err = scan(s, &n, &p);

	if (err)
		return err;
	return *p ? -EINVAL : set_finite(n.v, out);
}

int avfs_parse_scaled(const char *s, unsigned base, double *out)
{
	struct num n;
	const char *p;
	unsigned pw;
	int err = base == 1000 || base == 1024 ? scan_scaled(s, &n, &pw, &p) : -EINVAL;

	if (err)
		return err;
	return *p ? -EINVAL : set_finite(n.v * ipow(base, pw), out);
}

int avfs_parse_size(const char *s, uint64_t *out)
{
	struct num n;
	const char *p;
	unsigned pw;
	double b;
	int err = scan_scaled(s, &n, &pw, &p);

	if (err)
		return err;
	p += pw && *p == 'i';
	p += *p == 'B';
	if (*p)
		return -EINVAL;
	if (n.whole) {	/* exact, whatever the size: "18446744073709551615" */
		if (!n.fits || n.u > UINT64_MAX >> (10 * pw))
			return -ERANGE;
		*out = n.u << (10 * pw);
		return 0;
	}
	b = n.v * ipow(1024, pw);
	if (b >= TWO_64)
		return -ERANGE;
	*out = (uint64_t)b;
	return 0;
}

int avfs_parse_rate(const char *s, bool bits, double *out)
{
	struct num n;
	const char *p;
	unsigned pw;
	bool bin;
	int err = scan_scaled(s, &n, &pw, &p);

	if (err)
		return err;
	bin = pw && *p == 'i';	/* "3MiB/s": a binary multiplier */
	p += bin;
	if (!strcmp(p, "bit") || !strcmp(p, "bps"))
		bits = true;
	else if (!strcmp(p, "B") || !strcmp(p, "B/s"))
		bits = false;
	else if (*p)
		return -EINVAL;
	return set_finite(n.v * ipow(bin ? 1024 : 1000, pw) / (bits ? 8 : 1), out);
}

int avfs_parse_time(const char *s, int64_t *out)
{
	static const struct {
		const char *name;
		int64_t ns;
	} unit[] = { { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 } };
	struct num n;
	const char *p;
	double t;
	int err = scan(s, &n, &p);
	size_t i;

	if (err)
		return err;
	if (!*p && n.v == 0) {	/* a zero needs no unit */
		*out = 0;
		return 0;
	}
	for (i = 0; i < sizeof(unit) / sizeof(unit[0]) && strcmp(p, unit[i].name); i++)
		;
	if (i == sizeof(unit) / sizeof(unit[0]))
		return -EINVAL;	/* a time needs a unit */
	if (n.whole) {	/* exact: "1500000ns" */
		if (!n.fits || n.u > (uint64_t)INT64_MAX / (uint64_t)unit[i].ns)
			return -ERANGE;
		*out = (int64_t)n.u * unit[i].ns;
		return 0;
	}
	t = n.v * (double)unit[i].ns;
	if (t >= TWO_63)
		return -ERANGE;
	*out = (int64_t)t;
	return 0;
}
