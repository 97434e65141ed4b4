/*
 * units.h — the one parser of the sizes, rates, times and scaled numbers that the tools,
 * examples and settings read ("512K", "19.39Mbit", "500ms", "1e6"). Pure: no I/O, no clock,
 * no exit(), so that the sans-I/O cores may use it too. Range checks (a multiple of 4K, at most
 * 60 s, ...) are the caller's; these only say whether the text is a value of the kind.
 *
 * A number is unsigned decimal: digits with an optional fraction and exponent ("19.39", ".5",
 * "1e6"); no sign, no space, no hex, no inf or nan. Each function returns 0 with *out set, or
 * -EINVAL (not a value of the kind: empty, malformed, negative, trailing text) or -ERANGE (too
 * large for the result) with *out untouched.
 */
#ifndef AVFS_UNITS_H
#define AVFS_UNITS_H

#include <stdbool.h>
#include <stdint.h>

/* A whole number as C writes one: decimal, 0x hex or 0 octal ("42", "0x2a"), up to
 * UINT64_MAX, no sign: seeds and identifiers, which take no multiplier. */
int avfs_parse_uint(const char *s, uint64_t *out);

/* A plain number, nothing after it ("0.8"). */
int avfs_parse_number(const char *s, double *out);

/* A number with an optional multiplier K, M, G or T (either case) of base 1000 or 1024
 * (any other base: -EINVAL): counts, seconds ("1K" = 1000 with base 1000). */
int avfs_parse_scaled(const char *s, unsigned base, double *out);

/* A size in bytes: a number, an optional binary multiplier K, M, G, T (either case, 2^10 ..
 * 2^40) with an optional 'i', then an optional 'B' ("4096", "512K", "16MiB", "1.5G", "8GB").
 * A fraction of a byte is dropped; beyond UINT64_MAX: -ERANGE. */
int avfs_parse_size(const char *s, uint64_t *out);

/* A rate, in bytes/s into *out: a number, an optional multiplier K, M, G, T (either case),
 * decimal (10^3 .. 10^12) or with an 'i' binary (2^10 .. 2^40), then "bit" or "bps" (bits per
 * second), "B" or "B/s" (bytes per second) or nothing: bits when bits is true ("19.39M" for a
 * bit rate), else bytes ("3MiB/s" is 3 * 2^20 bytes/s). */
int avfs_parse_rate(const char *s, bool bits, double *out);

/* A time, in ns into *out: a number and a unit ns, us, ms or s ("500ms", "1.5s"); a zero
 * needs none ("0"). A fraction of a ns is dropped; beyond INT64_MAX ns: -ERANGE. */
int avfs_parse_time(const char *s, int64_t *out);

#endif
