/*
 * Tests of libsimdex through its C API: every function and its error paths, with brute-force
 * oracles for the answers; here versions, indexes and stores of fingerprints, and in
 * test_documents.c document stores and threads. Built with AddressSanitizer and
 * UndefinedBehaviorSanitizer by `make -C bindings/c test`.
 *
 *     test_simdex DIR    (DIR: an empty scratch directory)
 */
#include "check.h"

const char *scratch;
int checks;
__thread char **err_ptr;

char *path_of(const char *name) {
    static char buf[8][4096];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", scratch, name);
    return p;
}

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

simdex_store *open_store(const char *dir, int create, int read_only) {
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
    int32_t named = 0;
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "keeps no document ids",
          simdex_store_document_id(st, 1, NULL, 0, &len, &named, ERR));
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
