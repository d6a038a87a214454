/*
 * Tests of libsimdex through its C API: every function, its error paths, brute-force oracles
 * for the answers, the shared corpus (tests/corpus.md) and eight threads querying one store
 * while another writes. Built with AddressSanitizer and UndefinedBehaviorSanitizer by
 * `make -C bindings/c test`.
 *
 *     test_simdex DIR    (DIR: an empty scratch directory)
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simdex.h"

static const char *scratch;
static int checks;

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
static __thread char **err_ptr;

static char *path_of(const char *name) {
    static char buf[8][4096];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", scratch, name);
    return p;
}

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int popcount64(uint64_t x) { return __builtin_popcountll(x); }

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* ---- version and errors ---------------------------------------------------------------- */

static void test_version(void) {
    CHECK(simdex_abi_version() == SIMDEX_ABI_VERSION);
    CHECK(strlen(simdex_version()) >= 5);
    OK(simdex_check_version(SIMDEX_ABI_VERSION, ERR));
    FAILS(SIMDEX_ERR_VERSION, "ABI version", simdex_check_version(SIMDEX_ABI_VERSION + 1, ERR));
    /* A NULL err is allowed: the status alone. */
    CHECK(simdex_check_version(999, NULL) == SIMDEX_ERR_VERSION);
    simdex_string_free(NULL);
}

/* ---- indexes ----------------------------------------------------------------------------- */

#define N_INDEX 20000

static void test_index(void) {
    uint64_t *fps = malloc(N_INDEX * sizeof *fps);
    uint64_t s = 7;
    for (int i = 0; i < N_INDEX; i++) {
        /* Every fourth key a near copy of the one before: answers with several matches. */
        fps[i] = (i % 4 == 3) ? fps[i - 1] ^ (1ULL << (splitmix64(&s) % 64)) : splitmix64(&s);
    }
    /* The distinct keys, for the brute-force oracle. */
    uint64_t *uniq = malloc(N_INDEX * sizeof *uniq);
    memcpy(uniq, fps, N_INDEX * sizeof *uniq);
    qsort(uniq, N_INDEX, sizeof *uniq, cmp_u64);
    size_t distinct = 0;
    for (size_t i = 0; i < N_INDEX; i++)
        if (i == 0 || uniq[i] != uniq[i - 1]) uniq[distinct++] = uniq[i];
    const char *dir = path_of("index");
    OK(simdex_index_build(dir, fps, N_INDEX, 3, NULL, ERR));
    FAILS(SIMDEX_ERR_IO, "index", simdex_index_build(dir, fps, N_INDEX, 3, NULL, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "fingerprints is NULL",
          simdex_index_build(path_of("index2"), NULL, 5, 3, NULL, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "path is NULL",
          simdex_index_build(NULL, fps, N_INDEX, 3, NULL, ERR));

    simdex_cancel *cancel = simdex_cancel_new();
    OK(simdex_cancel_set(cancel));
    FAILS(SIMDEX_ERR_CANCELLED, "cancel",
          simdex_index_build(path_of("index3"), fps, N_INDEX, 3, cancel, ERR));
    OK(simdex_cancel_reset(cancel));

    for (uint32_t flags = 0; flags <= SIMDEX_INDEX_IN_MEMORY; flags++) {
        simdex_index *idx = NULL;
        OK(simdex_index_open(dir, flags | SIMDEX_INDEX_POPULATE, &idx, ERR));
        simdex_index_stats st;
        OK(simdex_index_get_stats(idx, &st, ERR));
        CHECK(st.keys == distinct && st.k == 3 && st.tables > 0 && st.disk_bytes > 0);

        /* Single queries against brute force, with a buffer too small at first. */
        uint64_t got[64];
        uint32_t dist[64];
        for (int q = 0; q < 300; q++) {
            uint64_t query = fps[(q * 61) % N_INDEX] ^ (q % 3 ? 1ULL << (q % 64) : 0);
            size_t len = 0;
            OK(simdex_index_near(idx, query, 3, got, dist, 0, &len, ERR));
            size_t want = 0;
            for (size_t i = 0; i < distinct; i++) want += popcount64(uniq[i] ^ query) <= 3;
            CHECK(len == want);
            OK(simdex_index_near(idx, query, SIMDEX_K_DEFAULT, got, dist, 64, &len, ERR));
            CHECK(len == want);
            for (size_t r = 0; r < len; r++) {
                CHECK(popcount64(got[r] ^ query) == (int)dist[r] && dist[r] <= 3);
                CHECK(r == 0 || dist[r - 1] < dist[r] || (dist[r - 1] == dist[r] && got[r - 1] < got[r]));
            }
            int32_t found = -1;
            OK(simdex_index_has_near(idx, query, 3, &found, ERR));
            CHECK(found == (want > 0));
        }

        /* A batch equals the single queries. */
        simdex_rows *rows = NULL;
        OK(simdex_index_near_many(idx, fps, 1000, 2, cancel, &rows, ERR));
        CHECK(rows->queries == 1000 && rows->ids == NULL && rows->offsets[0] == 0);
        CHECK(rows->offsets[1000] == rows->len);
        for (size_t q = 0; q < 1000; q++) {
            size_t len = 0;
            OK(simdex_index_near(idx, fps[q], 2, got, dist, 64, &len, ERR));
            CHECK(len == rows->offsets[q + 1] - rows->offsets[q]);
            for (size_t r = 0; r < len; r++) {
                CHECK(got[r] == rows->fingerprints[rows->offsets[q] + r]);
                CHECK(dist[r] == rows->distances[rows->offsets[q] + r]);
            }
        }
        simdex_rows_free(rows);
        OK(simdex_cancel_set(cancel));
        rows = NULL;
        FAILS(SIMDEX_ERR_CANCELLED, "cancel", simdex_index_near_many(idx, fps, 1000, 2, cancel, &rows, ERR));
        CHECK(rows == NULL);
        OK(simdex_cancel_reset(cancel));

        /* Errors: k beyond the design, NULL buffers, a store's handle passed as an index. */
        size_t len;
        FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "", simdex_index_near(idx, 1, 9, got, dist, 64, &len, ERR));
        FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "fingerprints is NULL",
              simdex_index_near(idx, 1, 3, NULL, dist, 64, &len, ERR));
        FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "len is NULL", simdex_index_near(idx, 1, 3, got, dist, 64, NULL, ERR));
        FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "index is NULL",
              simdex_index_near(NULL, 1, 3, got, dist, 64, &len, ERR));
        FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "not a simdex_index",
              simdex_index_near((const simdex_index *)cancel, 1, 3, got, dist, 64, &len, ERR));
        FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "out is NULL",
              simdex_index_near_many(idx, fps, 10, 3, NULL, NULL, ERR));
        FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "found is NULL", simdex_index_has_near(idx, 1, 3, NULL, ERR));
        FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "out is NULL", simdex_index_get_stats(idx, NULL, ERR));
        CHECK(simdex_index_close(idx) == SIMDEX_OK);
    }
    simdex_index *idx = (simdex_index *)0x1;
    FAILS(SIMDEX_ERR_IO, "missing", simdex_index_open(path_of("missing"), 0, &idx, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "flags", simdex_index_open(dir, 64, &idx, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "path is empty", simdex_index_open("", 0, &idx, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "out is NULL", simdex_index_open(dir, 0, NULL, ERR));
    CHECK(simdex_index_close(NULL) == SIMDEX_OK);
    simdex_cancel_free(cancel);
    simdex_cancel_free(NULL);
    CHECK(simdex_cancel_set(NULL) == SIMDEX_ERR_INVALID_ARGUMENT);
    free(uniq);
    free(fps);
}

/* ---- stores of fingerprints ------------------------------------------------------------- */

#define N_STORE 20000

static simdex_store *open_store(const char *dir, int create, int read_only) {
    simdex_store_options *o = simdex_store_options_new();
    CHECK(simdex_store_options_set_create(o, create) == SIMDEX_OK);
    CHECK(simdex_store_options_set_read_only(o, read_only) == SIMDEX_OK);
    CHECK(simdex_store_options_set_k(o, 3) == SIMDEX_OK);
    CHECK(simdex_store_options_set_expected_keys(o, 100000) == SIMDEX_OK);
    simdex_store *s = NULL;
    OK(simdex_store_open(dir, o, &s, ERR));
    simdex_store_options_free(o);
    return s;
}

/* The rows of one query against brute force over the live (fingerprint, id) pairs. */
static void check_store_query(simdex_store *s, const uint64_t *fps, const uint64_t *ids,
                              const char *live, size_t n, uint64_t query) {
    uint64_t f[256], id[256];
    uint32_t d[256];
    size_t len = 0;
    OK(simdex_store_near(s, query, 3, f, d, id, 256, &len, ERR));
    size_t want = 0;
    for (size_t i = 0; i < n; i++) want += live[i] && popcount64(fps[i] ^ query) <= 3;
    CHECK(len == want && len <= 256);
    for (size_t r = 0; r < len; r++) {
        CHECK((int)d[r] == popcount64(f[r] ^ query));
        int hit = 0;
        for (size_t i = 0; i < n && !hit; i++) hit = live[i] && fps[i] == f[r] && ids[i] == id[r];
        CHECK(hit);
    }
}

static void test_store(void) {
    uint64_t *fps = malloc(N_STORE * sizeof *fps), *ids = malloc(N_STORE * sizeof *ids);
    char *live = malloc(N_STORE);
    uint64_t s = 11;
    for (int i = 0; i < N_STORE; i++) {
        fps[i] = (i % 5 == 4) ? fps[i - 1] ^ (3ULL << (splitmix64(&s) % 62)) : splitmix64(&s);
        ids[i] = i % 7 == 6 ? ids[i - 1] : (uint64_t)i; /* some ids with two fingerprints */
        live[i] = 1;
    }
    const char *dir = path_of("store");
    simdex_store *st = open_store(dir, 1, 0);
    OK(simdex_store_insert(st, fps, ids, N_STORE, NULL, ERR));

    /* A second writer is refused; a reader beside the writer sees what was written. */
    simdex_store *other = NULL;
    FAILS(SIMDEX_ERR_LOCKED, "", simdex_store_open(dir, NULL, &other, ERR));
    simdex_store *reader = open_store(dir, 0, 1);
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "read-only", simdex_store_insert(reader, fps, ids, 1, NULL, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "read-only", simdex_store_compact(reader, NULL, NULL, ERR));
    OK(simdex_store_flush(reader, ERR));

    for (int q = 0; q < 100; q++) {
        uint64_t query = fps[(q * 37) % N_STORE] ^ (1ULL << (q % 64));
        check_store_query(st, fps, ids, live, N_STORE, query);
        check_store_query(reader, fps, ids, live, N_STORE, query);
    }
    OK(simdex_store_close(reader, ERR));

    /* Delete every id divisible by 3, then compact: answers follow. */
    uint64_t del[N_STORE];
    size_t nd = 0;
    for (int i = 0; i < N_STORE; i++) {
        if (ids[i] % 3 == 0) {
            live[i] = 0;
            if (nd == 0 || del[nd - 1] != ids[i]) del[nd++] = ids[i];
        }
    }
    OK(simdex_store_delete(st, del, nd, NULL, ERR));
    int32_t compacted = -1;
    OK(simdex_store_compact(st, NULL, &compacted, ERR));
    CHECK(compacted == 1);
    OK(simdex_store_compact(st, NULL, &compacted, ERR));
    CHECK(compacted == 0);
    OK(simdex_store_flush(st, ERR));
    simdex_store_stats stats;
    OK(simdex_store_get_stats(st, &stats, ERR));
    CHECK(stats.k == 3 && stats.documents_store == 0 && stats.delta_pairs == 0 && stats.disk_bytes > 0);
    uint64_t live_pairs = 0;
    for (int i = 0; i < N_STORE; i++) live_pairs += live[i];
    CHECK(stats.pairs == live_pairs && stats.fingerprints <= live_pairs);

    /* A batch equals the single queries; cancelled batches and writes stop. */
    simdex_rows *rows = NULL;
    OK(simdex_store_near_many(st, fps, 500, SIMDEX_K_DEFAULT, NULL, &rows, ERR));
    CHECK(rows->queries == 500 && rows->ids != NULL);
    for (size_t q = 0; q < 500; q++) {
        uint64_t f[256], id[256];
        uint32_t d[256];
        size_t len = 0;
        OK(simdex_store_near(st, fps[q], 3, f, d, id, 256, &len, ERR));
        CHECK(len == rows->offsets[q + 1] - rows->offsets[q]);
        for (size_t r = 0; r < len; r++) {
            size_t at = rows->offsets[q] + r;
            CHECK(f[r] == rows->fingerprints[at] && d[r] == rows->distances[at] && id[r] == rows->ids[at]);
        }
    }
    simdex_rows_free(rows);
    simdex_cancel *cancel = simdex_cancel_new();
    simdex_cancel_set(cancel);
    FAILS(SIMDEX_ERR_CANCELLED, "cancel", simdex_store_insert(st, fps, ids, 10, cancel, ERR));
    FAILS(SIMDEX_ERR_CANCELLED, "cancel", simdex_store_near_many(st, fps, 5000, 3, cancel, &rows, ERR));
    FAILS(SIMDEX_ERR_CANCELLED, "cancel", simdex_store_compact(st, cancel, NULL, ERR));
    simdex_cancel_free(cancel);

    /* Errors. */
    size_t len;
    uint64_t f[4], id[4];
    uint32_t d[4];
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "ids is NULL", simdex_store_insert(st, fps, NULL, 3, NULL, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "", simdex_store_near(st, 1, 40, f, d, id, 4, &len, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "not a simdex_store",
          simdex_store_near((const simdex_store *)f, 1, 3, f, d, id, 4, &len, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "no recipe", simdex_store_simhash(st, "a b c", 5, f, NULL, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "shingle sets", simdex_store_expire(st, SIMDEX_EXPIRE_SEQ_BELOW, 5, NULL, ERR));
    simdex_verdicts *v = NULL;
    simdex_str doc = {"x", 1};
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "", simdex_store_ingest(st, &doc, &doc, 1, NAN, SIMDEX_K_DEFAULT, 0, NULL, &v, ERR));
    OK(simdex_store_close(st, ERR));
    CHECK(simdex_store_close(NULL, NULL) == SIMDEX_OK);

    /* Reopen: the same answers. */
    st = open_store(dir, 0, 0);
    for (int q = 0; q < 50; q++) check_store_query(st, fps, ids, live, N_STORE, fps[q * 13]);
    OK(simdex_store_close(st, ERR));

    /* Options that contradict the store, or each other, or make no sense. */
    simdex_store_options *o = simdex_store_options_new();
    simdex_store_options_set_k(o, 5);
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "already exists with k", simdex_store_open(dir, o, &st, ERR));
    simdex_store_options_set_k(o, 3);
    simdex_store_options_set_documents(o, 1);
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "not a document store", simdex_store_open(dir, o, &st, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "sync", simdex_store_options_set_sync(o, "sometimes", ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "NULL", simdex_store_options_set_sync(o, NULL, ERR));
    OK(simdex_store_options_set_sync(o, "group:5", ERR));
    simdex_store_options_set_create(o, 1);
    simdex_store_options_set_read_only(o, 1);
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "exclude", simdex_store_open(path_of("new"), o, &st, ERR));
    simdex_store_options_free(o);
    o = simdex_store_options_new();
    simdex_store_options_set_exact(o, 0.9);
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "document store", simdex_store_open(dir, o, &st, ERR));
    simdex_store_options_set_documents(o, 1);
    simdex_store_options_set_create(o, 1);
    simdex_store_options_set_exact(o, 1.5);
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "1.5", simdex_store_open(path_of("bad-exact"), o, &st, ERR));
    simdex_store_options_set_exact(o, NAN);
    simdex_store_options_set_max_delta(o, 0);
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "max_delta", simdex_store_open(path_of("bad-delta"), o, &st, ERR));
    simdex_store_options_free(o);
    CHECK(simdex_store_options_set_k(NULL, 3) == SIMDEX_ERR_INVALID_ARGUMENT);
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "not a simdex_store_options",
          simdex_store_open(dir, (const simdex_store_options *)f, &st, ERR));
    free(fps);
    free(ids);
    free(live);
}

/* ---- document stores: the shared corpus (tests/corpus.md) ------------------------------ */

#define N_DOCS 100000

static char *corpus_text(uint64_t i) {
    char *out = malloc(80 * 7 + 1);
    out[0] = 0;
    if (i % 997 == 996) return out;
    uint64_t s = (i / 4) * 0x100000001B3ULL + 1, words[80];
    for (int j = 0; j < 80; j++) words[j] = splitmix64(&s) % 5000;
    uint64_t t = i ^ 0xABCDEF;
    for (uint64_t e = 0; e < i % 4; e++) {
        uint64_t r = splitmix64(&t);
        words[r % 80] = (r >> 20) % 5000;
    }
    char *p = out;
    for (int j = 0; j < 80; j++) p += sprintf(p, j ? " w%" PRIu64 : "w%" PRIu64, words[j]);
    return out;
}

static uint64_t fnv(uint64_t h, const void *bytes, size_t n) {
    const unsigned char *b = bytes;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t digest(const simdex_verdicts *v, uint64_t h) {
    for (size_t i = 0; i < v->len; i++) {
        unsigned char kind = (unsigned char)v->kinds[i], ff = 0xFF;
        int32_t d = v->distances[i];
        unsigned char le[4] = {d & 0xFF, (d >> 8) & 0xFF, (d >> 16) & 0xFF, (d >> 24) & 0xFF};
        h = fnv(h, &kind, 1);
        h = fnv(h, le, 4);
        h = fnv(h, v->matched[i].ptr, v->matched[i].len);
        h = fnv(h, &ff, 1);
        if (v->kinds[i] == SIMDEX_VERDICT_DUPLICATE) {
            CHECK(v->similarities[i] >= 0.85 && v->similarities[i] <= 1.0 && v->distances[i] >= 0);
        } else {
            CHECK(isnan(v->similarities[i]) && v->distances[i] == -1 && v->matched[i].len == 0);
        }
    }
    return h;
}

/* Ingest (or check) documents [from, to) under ids `prefix<i>`, in calls of 10,000. */
static uint64_t run_docs(simdex_store *st, const char *prefix, uint64_t from, uint64_t to, int write) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint64_t start = from; start < to; start += 10000) {
        uint64_t end = start + 10000 < to ? start + 10000 : to;
        size_t n = end - start;
        simdex_str *ids = malloc(n * sizeof *ids), *texts = malloc(n * sizeof *texts);
        for (size_t j = 0; j < n; j++) {
            char *id = malloc(32);
            snprintf(id, 32, "%s%" PRIu64, prefix, start + j);
            ids[j] = (simdex_str){id, strlen(id)};
            char *t = corpus_text(start + j);
            texts[j] = (simdex_str){t, strlen(t)};
        }
        simdex_verdicts *v = NULL;
        if (write) {
            OK(simdex_store_ingest(st, ids, texts, n, 0.85, SIMDEX_K_DEFAULT, 0, NULL, &v, ERR));
        } else {
            OK(simdex_store_check(st, ids, texts, n, 0.85, SIMDEX_K_DEFAULT, 0, NULL, &v, ERR));
        }
        CHECK(v->len == n);
        h = digest(v, h);
        simdex_verdicts_free(v);
        for (size_t j = 0; j < n; j++) {
            free((void *)ids[j].ptr);
            free((void *)texts[j].ptr);
        }
        free(ids);
        free(texts);
    }
    return h;
}

static void test_documents(void) {
    const char *dir = path_of("docs");
    simdex_store_options *o = simdex_store_options_new();
    simdex_store_options_set_create(o, 1);
    simdex_store_options_set_documents(o, 1);
    simdex_store_options_set_shingle(o, 2);
    simdex_store_options_set_html(o, 0);
    simdex_store_options_set_exact(o, 0.8);
    simdex_store *st = NULL;
    OK(simdex_store_open(dir, o, &st, ERR));
    simdex_store_options_free(o);

    CHECK(run_docs(st, "doc-", 0, N_DOCS, 1) == 0x09b5b283896081e6ULL);
    CHECK(run_docs(st, "new-", 0, 1000, 0) == 0x6b06e1bbf7334ec6ULL);

    /* A stored document's fingerprint, as the store hashes it, is found at distance 0. */
    char *t0 = corpus_text(0);
    uint64_t fp = 0;
    int32_t words = -1, found = -1;
    OK(simdex_store_simhash(st, t0, strlen(t0), &fp, &words, ERR));
    CHECK(words == 1);
    OK(simdex_store_has_near(st, fp, 0, &found, ERR));
    CHECK(found == 1);
    OK(simdex_store_simhash(st, "", 0, &fp, &words, ERR));
    CHECK(words == 0 && fp == 0);
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "UTF-8", simdex_store_simhash(st, "\xff\xfe", 2, &fp, NULL, ERR));
    free(t0);

    /* Bad documents: an id too long, text that is not UTF-8, NULL arrays, unknown flags. */
    char longid[3000];
    memset(longid, 'x', sizeof longid);
    simdex_str bad_id = {longid, sizeof longid}, ok_text = {"some words here", 15};
    simdex_str bad_text = {"\xc3\x28", 2}, ok_id = {"a", 1};
    simdex_verdicts *v = NULL;
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "string id of 3000 bytes",
          simdex_store_ingest(st, &bad_id, &ok_text, 1, NAN, SIMDEX_K_DEFAULT, 0, NULL, &v, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "texts[0] is not UTF-8",
          simdex_store_check(st, &ok_id, &bad_text, 1, NAN, SIMDEX_K_DEFAULT, 0, NULL, &v, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "texts is NULL",
          simdex_store_check(st, &ok_id, NULL, 1, NAN, SIMDEX_K_DEFAULT, 0, NULL, &v, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "flags",
          simdex_store_check(st, &ok_id, &ok_text, 1, NAN, SIMDEX_K_DEFAULT, 8, NULL, &v, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "",
          simdex_store_check(st, &ok_id, &ok_text, 1, 1.5, SIMDEX_K_DEFAULT, 0, NULL, &v, ERR));
    CHECK(v == NULL);
    OK(simdex_store_check(st, NULL, NULL, 0, NAN, SIMDEX_K_DEFAULT, SIMDEX_INGEST_STORE_ONLY, NULL, &v, ERR));
    CHECK(v->len == 0);
    simdex_verdicts_free(v);
    simdex_verdicts_free(NULL);

    /* Delete 1000 documents by id, compact, reopen: the answers the Rust API gives. */
    simdex_str ids[1000];
    char names[1000][16];
    for (int i = 0; i < 1000; i++) {
        snprintf(names[i], sizeof names[i], "doc-%d", i);
        ids[i] = (simdex_str){names[i], strlen(names[i])};
    }
    uint64_t deleted = 0;
    OK(simdex_store_delete_documents(st, ids, 1000, NULL, &deleted, ERR));
    CHECK(deleted == 489);
    OK(simdex_store_compact(st, NULL, NULL, ERR));
    simdex_store_stats stats;
    OK(simdex_store_get_stats(st, &stats, ERR));
    CHECK(stats.documents_store == 1 && stats.documents > 0);
    OK(simdex_store_close(st, ERR));
    OK(simdex_store_open(dir, NULL, &st, ERR));
    CHECK(run_docs(st, "new-", 0, 1000, 0) == 0x2119b88688d9bbd6ULL);

    /* Expiry: by sequence number, then by time (everything was stored before now + 1 hour). */
    uint64_t first = 0, rest = 0, before = stats.documents;
    OK(simdex_store_expire(st, SIMDEX_EXPIRE_SEQ_BELOW, 2000, &first, ERR));
    CHECK(first > 0 && first < 2000);
    OK(simdex_store_compact(st, NULL, NULL, ERR));
    OK(simdex_store_get_stats(st, &stats, ERR));
    CHECK(stats.documents == before - first);
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "expiry kind", simdex_store_expire(st, 7, 0, NULL, ERR));
    uint64_t later = (uint64_t)time(NULL) * 1000 + 3600000;
    OK(simdex_store_expire(st, SIMDEX_EXPIRE_STORED_BEFORE, later, &rest, ERR));
    OK(simdex_store_compact(st, NULL, NULL, ERR));
    OK(simdex_store_get_stats(st, &stats, ERR));
    CHECK(stats.documents == 0 && first + rest == before);
    simdex_verdicts *none = NULL;
    simdex_str id0 = {"again", 5};
    char *t1 = corpus_text(1);
    simdex_str text1 = {t1, strlen(t1)};
    OK(simdex_store_check(st, &id0, &text1, 1, 0.85, SIMDEX_K_DEFAULT, 0, NULL, &none, ERR));
    CHECK(none->kinds[0] == SIMDEX_VERDICT_NEW); /* nothing left to match */
    simdex_verdicts_free(none);
    free(t1);
    OK(simdex_store_close(st, ERR));
}

/* A store that learns its weights and shingle order from samples (at least 1000: fewer is an
   error) answers as exactly as one that does not. */
static void test_samples(void) {
    simdex_str sample[1000];
    for (int i = 0; i < 1000; i++) {
        char *t = corpus_text((uint64_t)i * 4);
        sample[i] = (simdex_str){t, strlen(t)};
    }
    simdex_store_options *o = simdex_store_options_new();
    simdex_store_options_set_create(o, 1);
    simdex_store_options_set_documents(o, 1);
    simdex_store_options_set_exact(o, 0.8);
    OK(simdex_store_options_add_sample(o, sample, 1000, ERR));
    OK(simdex_store_options_add_sample(o, NULL, 0, ERR));
    simdex_str bad = {"\xff", 1};
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "texts[0] is not UTF-8", simdex_store_options_add_sample(o, &bad, 1, ERR));
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "texts is NULL", simdex_store_options_add_sample(o, NULL, 2, ERR));
    simdex_store *st = NULL;
    OK(simdex_store_open(path_of("learned"), o, &st, ERR));
    simdex_store_options_free(o);
    /* Documents 0..1199: each group's edited members are duplicates of its first exactly when
       their Jaccard similarity reaches 0.85, as in the store without samples. */
    uint64_t h = run_docs(st, "doc-", 0, 1200, 1);
    simdex_store_options *plain = simdex_store_options_new();
    simdex_store_options_set_create(plain, 1);
    simdex_store_options_set_documents(plain, 1);
    simdex_store_options_set_exact(plain, 0.8);
    simdex_store *other = NULL;
    OK(simdex_store_open(path_of("unlearned"), plain, &other, ERR));
    simdex_store_options_free(plain);
    /* The fingerprints differ (IDF weights), so distances may; the kinds and matches do not. */
    simdex_str ids[1200], texts[1200];
    char names[1200][16];
    for (int i = 0; i < 1200; i++) {
        snprintf(names[i], sizeof names[i], "doc-%d", i);
        ids[i] = (simdex_str){names[i], strlen(names[i])};
        char *t = corpus_text(i);
        texts[i] = (simdex_str){t, strlen(t)};
    }
    simdex_verdicts *a = NULL, *b = NULL;
    OK(simdex_store_check(st, ids, texts, 1200, 0.85, SIMDEX_K_DEFAULT, 0, NULL, &a, ERR));
    OK(simdex_store_ingest(other, ids, texts, 1200, 0.85, SIMDEX_K_DEFAULT, 0, NULL, &b, ERR));
    int dups = 0;
    for (int i = 0; i < 1200; i++) {
        /* Checked again, every stored document is already stored; the others match as before. */
        CHECK(b->kinds[i] != SIMDEX_VERDICT_NEW || a->kinds[i] == SIMDEX_VERDICT_ALREADY_STORED);
        if (b->kinds[i] == SIMDEX_VERDICT_DUPLICATE) {
            dups++;
            CHECK(a->kinds[i] == SIMDEX_VERDICT_DUPLICATE && a->matched[i].len == b->matched[i].len);
            CHECK(memcmp(a->matched[i].ptr, b->matched[i].ptr, a->matched[i].len) == 0);
            CHECK(a->similarities[i] == b->similarities[i]);
        }
        free((void *)texts[i].ptr);
    }
    CHECK(dups > 300 && h != 0);
    simdex_verdicts_free(a);
    simdex_verdicts_free(b);
    OK(simdex_store_close(st, ERR));
    OK(simdex_store_close(other, ERR));
    for (int i = 0; i < 1000; i++) free((void *)sample[i].ptr);
}

/* ---- threads: eight readers query one store while a writer inserts --------------------- */

#define BASE 20000
#define READERS 8

static simdex_store *shared;
static uint64_t base_fps[BASE];
static volatile int writer_done;

static void *reader(void *arg) {
    uint64_t s = (uint64_t)(uintptr_t)arg, f[512], id[512];
    uint32_t d[512];
    int rounds = 0;
    while (!writer_done || rounds < 200) {
        uint64_t i = splitmix64(&s) % BASE;
        size_t len = 0;
        char *err = NULL;
        err_ptr = &err;
        /* Every base pair was written before the threads started: always found, exactly. */
        OK(simdex_store_near(shared, base_fps[i], 0, f, d, id, 512, &len, ERR));
        int hit = 0;
        for (size_t r = 0; r < len && r < 512; r++) {
            CHECK(f[r] == base_fps[i] && d[r] == 0);
            hit |= id[r] == i;
        }
        CHECK(hit);
        int32_t found = 0;
        OK(simdex_store_has_near(shared, base_fps[i] ^ 5, 3, &found, ERR));
        CHECK(found == 1);
        rounds++;
    }
    return NULL;
}

static void *writer(void *arg) {
    (void)arg;
    uint64_t s = 99;
    uint64_t fps[1000], ids[1000];
    for (int batch = 0; batch < 40; batch++) {
        for (int j = 0; j < 1000; j++) {
            fps[j] = splitmix64(&s);
            ids[j] = BASE + batch * 1000 + j;
        }
        OK(simdex_store_insert(shared, fps, ids, 1000, NULL, ERR));
        if (batch % 10 == 9) OK(simdex_store_compact(shared, NULL, NULL, ERR));
    }
    writer_done = 1;
    return NULL;
}

static void test_threads(void) {
    const char *dir = path_of("threads");
    shared = open_store(dir, 1, 0);
    uint64_t ids[BASE], s = 5;
    for (uint64_t i = 0; i < BASE; i++) {
        base_fps[i] = splitmix64(&s);
        ids[i] = i;
    }
    OK(simdex_store_insert(shared, base_fps, ids, BASE, NULL, ERR));
    pthread_t r[READERS], w;
    for (uintptr_t i = 0; i < READERS; i++) CHECK(pthread_create(&r[i], NULL, reader, (void *)(i + 1)) == 0);
    CHECK(pthread_create(&w, NULL, writer, NULL) == 0);
    CHECK(pthread_join(w, NULL) == 0);
    for (int i = 0; i < READERS; i++) CHECK(pthread_join(r[i], NULL) == 0);
    simdex_store_stats stats;
    OK(simdex_store_get_stats(shared, &stats, ERR));
    CHECK(stats.pairs + stats.delta_pairs == BASE + 40000);
    OK(simdex_store_close(shared, ERR));
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    scratch = argv[1];
    test_version();
    test_index();
    test_store();
    test_documents();
    test_samples();
    test_threads();
    printf("test_simdex: %d checks passed (libsimdex %s)\n", checks, simdex_version());
    return 0;
}
