/*
 * simdex.h: the C API of simdex, a storage engine for simhash fingerprints.
 *
 * Generated from bindings/c/src by bindings/c/gen_header.py: do not edit.
 *
 * The C ABI of simdex: `libsimdex` and its header `include/simdex.h`, generated from this
 * crate's source by `gen_header.py` (CI checks that the two agree).
 *
 * The conventions are those of SQLite's and RocksDB's C APIs:
 *
 * * **Opaque handles** (`simdex_index`, `simdex_store`, `simdex_store_options`,
 *   `simdex_cancel`), each created by one function and freed by one other.
 * * **Every call returns a `simdex_status`**: `SIMDEX_OK` (0) or an error code. Calls that can
 *   fail with a message take `char **err` last: when it is not NULL, an error stores there a
 *   NUL-terminated message that the caller frees with `simdex_string_free`; on success it is
 *   left untouched.
 * * **Caller-owned inputs** are (pointer, length) pairs; the library never keeps them after
 *   the call. A NULL pointer with a non-zero length, a NULL handle or out-pointer, text that
 *   is not UTF-8 or a handle of the wrong kind is `SIMDEX_ERR_INVALID_ARGUMENT`, never
 *   undefined behaviour (a freed or forged handle is the one thing no library can detect).
 * * **Results** go into caller buffers (single queries: a capacity and the full count, so
 *   that one call suffices in the common case) or into library-owned arrays that have their
 *   own free function (`simdex_rows_free`, `simdex_verdicts_free`).
 * * **No panic crosses the boundary**: one becomes `SIMDEX_ERR_INTERNAL` with its message.
 * * **Threads**: a handle of an index or a store may be used from any number of threads at
 *   once, except by its close call, which must be the last call on it. Options objects and
 *   result arrays belong to one thread at a time. A cancel token may be set from any thread.
 * * **Cancellation**: calls that can run long take a `const simdex_cancel *` (NULL: not
 *   cancellable) and stop with `SIMDEX_ERR_CANCELLED` soon after the token is set.
 */
#ifndef SIMDEX_H
#define SIMDEX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Handles. */

/* A cancel token: set it from any thread to stop the calls that were given it. */
typedef struct simdex_cancel simdex_cancel;

/* An index open read-only: a set of fingerprints and its permuted tables. */
typedef struct simdex_index simdex_index;

/* Options for `simdex_store_open`. Not thread-safe: set them from one thread, then open. */
typedef struct simdex_store_options simdex_store_options;

/* A store open for reading and writing, or read-only. */
typedef struct simdex_store simdex_store;


/* ----------------------------------------------------------------------
 * Status codes, versions, error messages and cancel tokens.
 */

/* The result of every call: `SIMDEX_OK` or one of the `SIMDEX_ERR_` codes. */
typedef int32_t simdex_status;

/* Success. */
#define SIMDEX_OK 0

/*
 * An argument is invalid: a NULL pointer, text that is not UTF-8, a handle of the wrong kind,
 * or a value out of range (k above the design's, an unknown sync policy, ...).
 */
#define SIMDEX_ERR_INVALID_ARGUMENT 1

/* An operating-system call failed (the message names the file and the operation). */
#define SIMDEX_ERR_IO 2

/* Bytes on disk are not a valid simdex structure (a checksum failed, a file is truncated). */
#define SIMDEX_ERR_CORRUPT 3

/* A file of a format version or codec this library cannot read. */
#define SIMDEX_ERR_UNSUPPORTED 4

/* Input could not be parsed or changed while it was read. */
#define SIMDEX_ERR_PARSE 5

/* Another process (or another open handle) holds the store's writer lock. */
#define SIMDEX_ERR_LOCKED 6

/* An earlier write or fsync failed: the store refuses writes until it is reopened. */
#define SIMDEX_ERR_POISONED 7

/* A process forked from the one that opened the store tried to write through its handle. */
#define SIMDEX_ERR_FORKED 8

/* The call's cancel token was set; nothing was published. */
#define SIMDEX_ERR_CANCELLED 9

/* The header the caller was compiled with does not match this library. */
#define SIMDEX_ERR_VERSION 10

/* A bug in simdex (a panic, caught at the boundary); the message says where. Please report it. */
#define SIMDEX_ERR_INTERNAL 11

/*
 * The ABI version of this header: `simdex_check_version(SIMDEX_ABI_VERSION, &err)` fails when
 * the library loaded at run time implements another one.
 */
#define SIMDEX_ABI_VERSION 1

/* Pass as `k` for the largest distance the index or store answers (its design's k). */
#define SIMDEX_K_DEFAULT UINT32_MAX

/* The library's version, `"major.minor.patch"` (a static string: never free it). */
const char *simdex_version(void);

/* The ABI version the library implements (`SIMDEX_ABI_VERSION` of its own header). */
uint32_t simdex_abi_version(void);

/*
 * `SIMDEX_OK` when `header_abi_version` (pass `SIMDEX_ABI_VERSION`) is the library's ABI
 * version, else `SIMDEX_ERR_VERSION` with both versions in `*err`. Call it once at start-up.
 */
simdex_status simdex_check_version(uint32_t header_abi_version, char **err);

/* Free a message stored in an `err` out-parameter (NULL is ignored). */
void simdex_string_free(char *s);

/*
 * A string handed to the library: `len` bytes of UTF-8 at `ptr`, not NUL-terminated (`ptr`
 * may be NULL when `len` is 0). Also how the library returns ids it owns.
 */
typedef struct simdex_str {
    /* The bytes. */
    const char *ptr;
    /* Their number. */
    size_t len;
} simdex_str;

/* A new token, not set. Free it with `simdex_cancel_free` once no call uses it. */
simdex_cancel *simdex_cancel_new(void);

/*
 * Set the token: calls running with it stop soon with `SIMDEX_ERR_CANCELLED`, and later calls
 * given it stop at once until `simdex_cancel_reset`. Thread-safe.
 */
simdex_status simdex_cancel_set(const simdex_cancel *token);

/* Clear the token, so that it can be given to new calls. */
simdex_status simdex_cancel_reset(const simdex_cancel *token);

/* Free a token (NULL is ignored). No call may be using it. */
void simdex_cancel_free(simdex_cancel *token);


/* ----------------------------------------------------------------------
 * Results the library owns.
 */

/*
 * The answers to a batch of queries, as columns: the rows of query `q` are
 * `offsets[q] .. offsets[q + 1]` of `fingerprints`, `distances` and `ids`, by distance, then
 * fingerprint, then id. Owned by the library: read it, then `simdex_rows_free` it.
 */
typedef struct simdex_rows {
    /* Number of queries. */
    size_t queries;
    /* Number of rows. */
    size_t len;
    /* `queries + 1` ascending offsets, the first 0 and the last `len`. */
    const uint64_t *offsets;
    /* Each row's stored fingerprint. */
    const uint64_t *fingerprints;
    /* Each row's Hamming distance to its query. */
    const uint32_t *distances;
    /* Each row's document id (a store's rows); NULL for an index, which stores no ids. */
    const uint64_t *ids;
} simdex_rows;

/* Free rows (NULL is ignored). */
void simdex_rows_free(simdex_rows *rows);

/* Nothing stored before the document is a near-duplicate: it is new (and ingest stored it). */
#define SIMDEX_VERDICT_NEW 0

/* A near-duplicate of a stored document: `matched`, `similarity` and `distance` say which. */
#define SIMDEX_VERDICT_DUPLICATE 1

/* A document without words: nobody's near-duplicate, and not stored. */
#define SIMDEX_VERDICT_EMPTY 2

/* The same document is already stored under this id (a retried call): not stored again. */
#define SIMDEX_VERDICT_ALREADY_STORED 3

/*
 * The verdicts of a batch of documents, in input order, as columns. Owned by the library:
 * read it, then `simdex_verdicts_free` it.
 */
typedef struct simdex_verdicts {
    /* Number of documents. */
    size_t len;
    /* Each document's `SIMDEX_VERDICT_` kind. */
    const int32_t *kinds;
    /*
     * A duplicate's word 3-shingle Jaccard similarity with its match (exact in a store created
     * with exact verification, else the sketches' estimate); NaN for other kinds.
     */
    const double *similarities;
    /* A duplicate's Hamming distance to its match; -1 for other kinds. */
    const int32_t *distances;
    /* A duplicate's match: the stored document's id as it was given; empty for other kinds. */
    const simdex_str *matched;
} simdex_verdicts;

/* Free verdicts (NULL is ignored). */
void simdex_verdicts_free(simdex_verdicts *verdicts);


/* ----------------------------------------------------------------------
 * Indexes.
 */

/* Open the index in memory (read whole at open) instead of mapping its files. */
#define SIMDEX_INDEX_IN_MEMORY 1

/* Map the index and read it into the page cache at open, so first queries do not fault. */
#define SIMDEX_INDEX_POPULATE 2

/*
 * Build an index at `path` (which must not exist) from `n` fingerprints, in any order
 * (repeats are kept once), for queries within `k` bits (the design is chosen for `k` and `n`).
 * Writes in a staging directory and renames it into place: a failed or cancelled build leaves
 * nothing behind.
 */
simdex_status simdex_index_build(
    const char *path,
    const uint64_t *fingerprints,
    size_t n,
    uint32_t k,
    const simdex_cancel *cancel,
    char **err);

/*
 * Open the index at `path`; `flags` is 0 or a combination of `SIMDEX_INDEX_` flags. On
 * success `*out` is the handle, for `simdex_index_close`. Thread-safe: any number of threads
 * may query one handle at once.
 */
simdex_status simdex_index_open(const char *path, uint32_t flags, simdex_index **out, char **err);

/* Close an index and free its handle (NULL is ignored). The last call on the handle. */
simdex_status simdex_index_close(simdex_index *index);

/*
 * Every stored fingerprint within `k` bits of `fingerprint` (`SIMDEX_K_DEFAULT`: the design's
 * k), by distance then value. `*len` is set to their number; the first `min(*len, cap)` are
 * written to `fingerprints` and `distances` (each of `cap` elements; NULL when `cap` is 0).
 * When `*len > cap`, call again with a larger buffer. Thread-safe.
 */
simdex_status simdex_index_near(
    const simdex_index *index,
    uint64_t fingerprint,
    uint32_t k,
    uint64_t *fingerprints,
    uint32_t *distances,
    size_t cap,
    size_t *len,
    char **err);

/*
 * `*found` = 1 if some stored fingerprint is within `k` bits of `fingerprint`, else 0.
 * Thread-safe.
 */
simdex_status simdex_index_has_near(
    const simdex_index *index,
    uint64_t fingerprint,
    uint32_t k,
    int32_t *found,
    char **err);

/*
 * The matches of `n` queries, on all cores: `*out` gets rows without ids, for
 * `simdex_rows_free`. Cancellable; thread-safe.
 */
simdex_status simdex_index_near_many(
    const simdex_index *index,
    const uint64_t *fingerprints,
    size_t n,
    uint32_t k,
    const simdex_cancel *cancel,
    simdex_rows **out,
    char **err);

/* What `simdex_index_get_stats` reports. */
typedef struct simdex_index_stats {
    /* Fingerprints stored. */
    uint64_t keys;
    /* The largest distance the design answers. */
    uint32_t k;
    /* Permuted tables. */
    uint32_t tables;
    /* Fingerprints per block. */
    uint32_t block_size;
    /* Bytes of the table files. */
    uint64_t disk_bytes;
    /* Bytes the index holds in memory (the block-key arrays; the tables are mapped). */
    uint64_t memory_bytes;
} simdex_index_stats;

/* Sizes of the index. Thread-safe. */
simdex_status simdex_index_get_stats(
    const simdex_index *index,
    simdex_index_stats *out,
    char **err);


/* ----------------------------------------------------------------------
 * How a store is opened (or created).
 */

/*
 * New options: open an existing store for reading and writing, every write durable when its
 * call returns (`per-write`). Free with `simdex_store_options_free`.
 */
simdex_store_options *simdex_store_options_new(void);

/* Free options (NULL is ignored); a store opened with them does not need them. */
void simdex_store_options_free(simdex_store_options *opts);

/* Create the store when `path` holds none (non-zero), with the options below; default 0. */
simdex_status simdex_store_options_set_create(simdex_store_options *opts, int32_t create);

/*
 * Open read-only (non-zero): beside a writer in another process, seeing what it wrote up to the
 * open. Writes fail. Default 0.
 */
simdex_status simdex_store_options_set_read_only(simdex_store_options *opts, int32_t read_only);

/*
 * A new store's largest query distance (default 3). Opening an existing store with another
 * k fails rather than ignore it.
 */
simdex_status simdex_store_options_set_k(simdex_store_options *opts, uint32_t k);

/*
 * When writes are durable: `"per-write"` (default: when the call returns; concurrent writers
 * share fsyncs), `"group:<ms>"` (within that many milliseconds) or `"manual"` (at
 * `simdex_store_flush`). `SIMDEX_ERR_INVALID_ARGUMENT` with a message for anything else.
 */
simdex_status simdex_store_options_set_sync(
    simdex_store_options *opts,
    const char *policy,
    char **err);

/* Compact when the in-memory delta holds this many writes (default 2^20). */
simdex_status simdex_store_options_set_max_delta(simdex_store_options *opts, uint64_t max_delta);

/* The fingerprints a new store is expected to grow to, for its design (default 10M). */
simdex_status simdex_store_options_set_expected_keys(simdex_store_options *opts, uint64_t keys);

/*
 * Create a document store (non-zero): it hashes the texts it is given and keeps each
 * document's string id. Opening a store of raw fingerprints with it fails. Default 0.
 */
simdex_status simdex_store_options_set_documents(simdex_store_options *opts, int32_t documents);

/* A new document store's shingle size in words for fingerprints (default 2). */
simdex_status simdex_store_options_set_shingle(simdex_store_options *opts, uint32_t shingle);

/* A new document store's texts are HTML (non-zero): fingerprints of their visible text. */
simdex_status simdex_store_options_set_html(simdex_store_options *opts, int32_t html);

/*
 * A new document store keeps every document's word 3-shingle set, so that verification at
 * any threshold of at least `threshold` (0 < T <= 1) is exact. NaN: sketches only (default),
 * whose similarities are estimates.
 */
simdex_status simdex_store_options_set_exact(simdex_store_options *opts, double threshold);

/*
 * Texts a new document store learns from (copied): IDF weights for its fingerprints and, with
 * exact verification, the shingle order its candidate filter uses (rare shingles first). Up to
 * a few thousand typical documents; without them the store weighs by counts and orders by hash.
 */
simdex_status simdex_store_options_add_sample(
    simdex_store_options *opts,
    const simdex_str *texts,
    size_t n,
    char **err);


/* ----------------------------------------------------------------------
 * Stores.
 */

/*
 * Open the store at `path` as `opts` says (NULL: defaults, an existing store for reading and
 * writing). On success `*out` is the handle, for `simdex_store_close`. One process may have
 * a store open for writing at a time (`SIMDEX_ERR_LOCKED` otherwise); readers may open it
 * beside. Thread-safe: any number of threads may read and write through one handle at once.
 */
simdex_status simdex_store_open(
    const char *path,
    const simdex_store_options *opts,
    simdex_store **out,
    char **err);

/*
 * Close the store and free its handle (NULL is ignored): every write is synced and background
 * work stops. The handle is freed even when the final sync fails (the error says so). The
 * last call on the handle.
 */
simdex_status simdex_store_close(simdex_store *store, char **err);

/*
 * Store `fingerprints[i]` for document `ids[i]`, `n` pairs. Durable as the sync policy says
 * when it returns. Cancellable between records of 65,536 pairs (those written stay written).
 * Thread-safe.
 */
simdex_status simdex_store_insert(
    const simdex_store *store,
    const uint64_t *fingerprints,
    const uint64_t *ids,
    size_t n,
    const simdex_cancel *cancel,
    char **err);

/*
 * Delete every pair of each of `n` document ids. Cancellable as `simdex_store_insert`.
 * Thread-safe.
 */
simdex_status simdex_store_delete(
    const simdex_store *store,
    const uint64_t *ids,
    size_t n,
    const simdex_cancel *cancel,
    char **err);

/*
 * The (fingerprint, distance, id) rows within `k` bits of `fingerprint` (`SIMDEX_K_DEFAULT`:
 * the store's k), by distance, fingerprint, then id. `*len` is set to their number; the first
 * `min(*len, cap)` are written to the three buffers (each of `cap` elements; NULL when `cap` is
 * 0). When `*len > cap`, call again with larger buffers. Thread-safe.
 */
simdex_status simdex_store_near(
    const simdex_store *store,
    uint64_t fingerprint,
    uint32_t k,
    uint64_t *fingerprints,
    uint32_t *distances,
    uint64_t *ids,
    size_t cap,
    size_t *len,
    char **err);

/*
 * `*found` = 1 if some stored fingerprint is within `k` bits of `fingerprint`, else 0.
 * Thread-safe.
 */
simdex_status simdex_store_has_near(
    const simdex_store *store,
    uint64_t fingerprint,
    uint32_t k,
    int32_t *found,
    char **err);

/*
 * The rows of `n` queries, on all cores: `*out` gets them, for `simdex_rows_free`.
 * Cancellable; thread-safe.
 */
simdex_status simdex_store_near_many(
    const simdex_store *store,
    const uint64_t *fingerprints,
    size_t n,
    uint32_t k,
    const simdex_cancel *cancel,
    simdex_rows **out,
    char **err);

/*
 * Sync every write acknowledged so far to stable storage (a no-op on a read-only store).
 * Thread-safe.
 */
simdex_status simdex_store_flush(const simdex_store *store, char **err);

/*
 * Build now what the first document check would build: a store that verifies exactly reads
 * every stored set into its prefix index (seconds per million documents). A service calls it
 * once after opening, before it takes requests; answers are the same either way. A no-op in
 * other stores. Thread-safe.
 */
simdex_status simdex_store_warm(const simdex_store *store, char **err);

/*
 * Fold the in-memory delta into a new generation on disk; `*compacted` (may be NULL) is 1 when
 * there was something to fold. Queries and writes go on meanwhile. Cancellable (the delta
 * stays, logged). Thread-safe.
 */
simdex_status simdex_store_compact(
    const simdex_store *store,
    const simdex_cancel *cancel,
    int32_t *compacted,
    char **err);

/* What `simdex_store_get_stats` reports. */
typedef struct simdex_store_stats {
    /* The live generation's number. */
    uint64_t generation;
    /* The largest distance the design answers. */
    uint32_t k;
    /* 1 for a document store. */
    int32_t documents_store;
    /* Distinct fingerprints in the live generation. */
    uint64_t fingerprints;
    /* (fingerprint, id) pairs in the live generation. */
    uint64_t pairs;
    /* Pairs written since (in the delta). */
    uint64_t delta_pairs;
    /* Ids deleted since. */
    uint64_t delta_deletes;
    /* Documents stored (a document store). */
    uint64_t documents;
    /* Bytes on disk: tables, id map, document map, shingle sets and logs. */
    uint64_t disk_bytes;
} simdex_store_stats;

/* Sizes and state of the store. Thread-safe. */
simdex_status simdex_store_get_stats(
    const simdex_store *store,
    simdex_store_stats *out,
    char **err);


/* ----------------------------------------------------------------------
 * Document stores.
 */

/*
 * Compare each document with the stored ones only, not with the earlier documents of the same
 * call (for callers that deduplicate a batch themselves).
 */
#define SIMDEX_INGEST_STORE_ONLY 1

/*
 * Check each of `n` documents (`ids[i]`, `texts[i]`) against everything stored before it,
 * the earlier documents of this call included, and store the new ones; a document under an id
 * already stored replaces it and is never compared with its old version. `verify`: the word
 * 3-shingle Jaccard similarity a duplicate must reach (exact in a store created with
 * `simdex_store_options_set_exact` at or below it, else estimated; NaN: every candidate within
 * `k` bits is a duplicate). `k`: candidates' largest distance (`SIMDEX_K_DEFAULT`: the store's).
 * `flags`: 0 or `SIMDEX_INGEST_STORE_ONLY`. `*out` gets the verdicts in input order, for
 * `simdex_verdicts_free`. Durable as the sync policy says when it returns. Cancellable between
 * chunks of 4,096 documents (earlier chunks stay stored). Thread-safe: concurrent calls on one
 * store are checked one after the other.
 */
simdex_status simdex_store_ingest(
    const simdex_store *store,
    const simdex_str *ids,
    const simdex_str *texts,
    size_t n,
    double verify,
    uint32_t k,
    uint32_t flags,
    const simdex_cancel *cancel,
    simdex_verdicts **out,
    char **err);

/*
 * The verdicts `simdex_store_ingest` would give, without storing anything (also on a store
 * open read-only): "which of these do we already have?". Cancellable; thread-safe.
 */
simdex_status simdex_store_check(
    const simdex_store *store,
    const simdex_str *ids,
    const simdex_str *texts,
    size_t n,
    double verify,
    uint32_t k,
    uint32_t flags,
    const simdex_cancel *cancel,
    simdex_verdicts **out,
    char **err);

/*
 * Delete each of `n` documents by the id it was ingested under; `*deleted` (may be NULL) is
 * how many were stored. Cancellable between chunks of 4,096 ids. Thread-safe.
 */
simdex_status simdex_store_delete_documents(
    const simdex_store *store,
    const simdex_str *ids,
    size_t n,
    const simdex_cancel *cancel,
    uint64_t *deleted,
    char **err);

/*
 * The id a document was ingested under, for the store id a query returned (`simdex_store_near`
 * and `simdex_store_near_many` answer with store ids: a string id's is the store's own number
 * for it). It is written to `buf` (`cap` bytes, not NUL-terminated; NULL when `cap` is 0) and
 * `*len` is set to its length: when `*len > cap`, call again with a larger buffer. `*found` is
 * 0 (and `*len` 0) when no document is stored under `id`. Thread-safe.
 */
simdex_status simdex_store_document_id(
    const simdex_store *store,
    uint64_t id,
    char *buf,
    size_t cap,
    size_t *len,
    int32_t *found,
    char **err);

/*
 * `simdex_store_expire`: documents stored before `bound` milliseconds since the Unix epoch (by
 * the writer's clock; a document ingested again was stored when it was ingested again).
 */
#define SIMDEX_EXPIRE_STORED_BEFORE 1

/*
 * `simdex_store_expire`: documents whose sequence number is below `bound` (the store's
 * documents are numbered 1, 2, ... in the order they were stored).
 */
#define SIMDEX_EXPIRE_SEQ_BELOW 2

/*
 * Delete every document `by` and `bound` cover (a `SIMDEX_EXPIRE_` kind); `*expired` (may be
 * NULL) is how many. Only a store created with exact verification knows when its documents
 * were stored; on others this is an argument error (delete by id instead). The next
 * compaction reclaims their space; no answer names them from the call on. Thread-safe.
 */
simdex_status simdex_store_expire(
    const simdex_store *store,
    uint32_t by,
    uint64_t bound,
    uint64_t *expired,
    char **err);

/*
 * The fingerprint a document store gives `text` (`len` bytes of UTF-8) under its recipe: the
 * one `simdex_store_ingest` stores, for `simdex_store_near`. `*has_words` (may be NULL) is 0
 * for a text without words, whose fingerprint is 0 and which ingest calls empty. Thread-safe.
 */
simdex_status simdex_store_simhash(
    const simdex_store *store,
    const char *text,
    size_t len,
    uint64_t *fingerprint,
    int32_t *has_words,
    char **err);

#ifdef __cplusplus
}
#endif

#endif /* SIMDEX_H */
