/*
 * why.c — the failure message helper of why.h. Nothing else: what a message says is the
 * caller's business.
 */
#include "why.h"

#include <stdarg.h>
#include <stdio.h>

void avfs_why(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}
