/*
 * crc32c.h — CRC32C (Castagnoli), the checksum of every AVFS metadata block and journal
 * transaction. Pure computation.
 */
#ifndef AVFS_CRC32C_H
#define AVFS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC32C: start with crc = 0. crc32c("123456789") == 0xe3069283. */
uint32_t avfs_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
