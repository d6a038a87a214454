/*
 * What the C tests share: the checks (CHECK, OK, FAILS), the scratch directory, and the
 * generators. The tests are in test_simdex.c (versions, indexes, stores) and test_documents.c
 * (document stores, the shared corpus, threads).
 */
#ifndef SIMDEX_TEST_CHECK_H
#define SIMDEX_TEST_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simdex.h"

extern const char *scratch;
extern int checks;
extern __thread char **err_ptr;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        checks++;                                                                      \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

/* Run a call that must succeed; on failure print its message. */
#define OK(call)                                                                       \
    do {                                                                               \
        char *err_ = NULL;                                                             \
        simdex_status st_ = call_with(call, &err_);                                    \
        if (st_ != SIMDEX_OK) {                                                        \
            fprintf(stderr, "%s:%d: %s -> %d: %s\n", __FILE__, __LINE__, #call, st_,   \
                    err_ ? err_ : "(no message)");                                     \
            exit(1);                                                                   \
        }                                                                              \
        checks++;                                                                      \
    } while (0)

/* Run a call that must fail with `status` and a message containing `part`. */
#define FAILS(status, part, call)                                                      \
    do {                                                                               \
        char *err_ = NULL;                                                             \
        simdex_status st_ = call_with(call, &err_);                                    \
        if (st_ != (status) || !err_ || !strstr(err_, part)) {                         \
            fprintf(stderr, "%s:%d: %s -> %d (wanted %d): %s\n", __FILE__, __LINE__,  \
                    #call, st_, status, err_ ? err_ : "(no message)");                 \
            exit(1);                                                                   \
        }                                                                              \
        simdex_string_free(err_);                                                      \
        checks++;                                                                      \
    } while (0)

/* `call_with(f(a, b, ERR), &e)`: the macros substitute the error out-parameter for ERR. */
#define call_with(call, errp) (err_ptr = (errp), (call))
#define ERR err_ptr

/* A path under the scratch directory (eight kept at a time). */
char *path_of(const char *name);

static inline uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline int popcount64(uint64_t x) { return __builtin_popcountll(x); }

/* A store of fingerprints at `dir`, k = 3, opened as the flags say (test_simdex.c). */
simdex_store *open_store(const char *dir, int create, int read_only);

/* The tests of test_documents.c. */
void test_documents(void);
void test_samples(void);
void test_threads(void);

#endif
