/* The end of a run of bytes a JSON string writer copies as they are, found eight bytes at a time: a string of
   plain text (the usual case) is scanned at a fraction of the cost of a byte-by-byte loop. Each test below says
   whether any byte of a word matches (it never misses one); the byte loop after it finds which. */

#ifndef CDC_PLAIN_BYTES_H
#define CDC_PLAIN_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CDC_ONES 0x0101010101010101ULL
#define CDC_HIGHS 0x8080808080808080ULL

/* Non-zero when a byte of `word` is `byte`. */
static inline uint64_t any_byte_is(uint64_t word, unsigned char byte) {
    uint64_t x = word ^ (CDC_ONES * byte);
    return (x - CDC_ONES) & ~x & CDC_HIGHS;
}

/* Non-zero when a byte of `word` is a control character (below 0x20). */
static inline uint64_t any_control(uint64_t word) { return (word - CDC_ONES * 0x20) & ~word & CDC_HIGHS; }

static inline uint64_t load_word(const unsigned char *at) {
    uint64_t word;
    memcpy(&word, at, 8);
    return word;
}

/* The first index from `i` of a byte JSON escapes in a string: a control character, the quote or the backslash
   (UTF-8 sequences pass as they are). `length` when there is none. */
static inline size_t json_plain_end(const unsigned char *text, size_t i, size_t length) {
    while (i + 8 <= length) {
        uint64_t word = load_word(text + i);
        if (any_control(word) | any_byte_is(word, '"') | any_byte_is(word, '\\')) break;
        i += 8;
    }
    while (i < length && text[i] >= 0x20 && text[i] != '"' && text[i] != '\\') i++;
    return i;
}

/* As json_plain_end, but also stopping at DEL and at every byte of a multi-byte UTF-8 sequence: the end of a run of
   printable ASCII other than the quote and the backslash. */
static inline size_t ascii_plain_end(const unsigned char *text, size_t i, size_t length) {
    while (i + 8 <= length) {
        uint64_t word = load_word(text + i);
        if ((word & CDC_HIGHS) | any_control(word) | any_byte_is(word, '"') | any_byte_is(word, '\\') |
            any_byte_is(word, 0x7F))
            break;
        i += 8;
    }
    while (i < length && text[i] >= 0x20 && text[i] < 0x7F && text[i] != '"' && text[i] != '\\') i++;
    return i;
}

#endif
