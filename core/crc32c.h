/* crc32c.h - CRC-32C (Castagnoli), the checksum of every ALEX record. */
#ifndef ALEX_CRC32C_H
#define ALEX_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues crc over buf; start with crc = 0.  Uses SSE4.2 when the CPU has
 * it, a table otherwise; both give the standard CRC-32C. */
uint32_t alex_crc32c(uint32_t crc, const void *buf, size_t len);

/* The portable path alone, so tests can check it on any CPU. */
uint32_t alex_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* 1 when alex_crc32c uses the CPU instruction. */
int alex_crc32c_hw(void);

#endif
