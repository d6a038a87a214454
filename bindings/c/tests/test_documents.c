/*
 * Tests of libsimdex's document stores through its C API: the shared corpus
 * (tests/corpus.md) against the Rust API's digests, bad documents, expiry, samples, and eight
 * threads querying one store while another writes.
 */
#include "check.h"

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

void test_documents(void) {
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

    /* A query answers with store ids; the document's own id comes back from its store id. */
    uint64_t f[8], sid[8];
    uint32_t dist[8];
    size_t rows = 0, len = 0;
    OK(simdex_store_near(st, fp, 0, f, dist, sid, 8, &rows, ERR));
    CHECK(rows >= 1);
    char name[64];
    int named = 0;
    for (size_t r = 0; r < rows && r < 8; r++) {
        OK(simdex_store_document_id(st, sid[r], name, sizeof name, &len, &found, ERR));
        CHECK(found == 1 && len < sizeof name);
        named |= len == 5 && memcmp(name, "doc-0", 5) == 0;
    }
    CHECK(named);
    OK(simdex_store_document_id(st, sid[0], name, 2, &len, &found, ERR)); /* too small */
    CHECK(found == 1 && len >= 5);
    OK(simdex_store_document_id(st, 0xdeadbeefcafeULL, NULL, 0, &len, &found, ERR));
    CHECK(found == 0 && len == 0);
    simdex_str num_id = {"424242", 6}, num_text = {"a numeric id names this page", 28};
    simdex_verdicts *nv = NULL;
    OK(simdex_store_ingest(st, &num_id, &num_text, 1, 0.85, SIMDEX_K_DEFAULT, 0, NULL, &nv, ERR));
    CHECK(nv->kinds[0] == SIMDEX_VERDICT_NEW);
    simdex_verdicts_free(nv);
    OK(simdex_store_document_id(st, 424242, name, sizeof name, &len, &found, ERR));
    CHECK(found == 1 && len == 6 && memcmp(name, "424242", 6) == 0);
    simdex_str del_num = {"424242", 6};
    OK(simdex_store_delete_documents(st, &del_num, 1, NULL, NULL, ERR));
    OK(simdex_store_document_id(st, 424242, name, sizeof name, &len, &found, ERR));
    CHECK(found == 0);
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
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "ids[0]: string id of 3000 bytes",
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
    OK(simdex_store_warm(st, ERR)); /* the prefix index built before the first check: same answers */
    FAILS(SIMDEX_ERR_INVALID_ARGUMENT, "the store is NULL", simdex_store_warm(NULL, ERR));
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
void test_samples(void) {
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

void test_threads(void) {
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

