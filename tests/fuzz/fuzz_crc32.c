/* fuzz_crc32.c — zlib's crc32() for the targets that link the CLI (fuzz_npz, fuzz_checkpoint,
 * fuzz_train_args), compiled with them so that the sanitizers see every byte a caller hands it.
 * zlib itself is not instrumented: a caller passing a length past the end of its buffer (the
 * CLI's checkpoint checksums, libzip's member CRCs) would read out of bounds unseen. Defined in
 * the executable, it takes the place of zlib's for the CLI's code and for libzip alike.
 *
 * The standard CRC-32 (ISO-HDLC: reflected polynomial 0xEDB88320, initial and final value all
 * ones), computed a byte at a time from a table: the values zlib gives, crc32(0, NULL, 0) == 0
 * included. */
#include <stdint.h>
#include <zlib.h>

static uint32_t table[256];

static void make_table(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
}

uLong crc32(uLong crc, const Bytef *buf, uInt len) {
  if (!buf) return 0;
  if (!table[1]) make_table();
  uint32_t c = (uint32_t)crc ^ 0xFFFFFFFFu;
  for (uInt i = 0; i < len; i++) c = table[(c ^ buf[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}
