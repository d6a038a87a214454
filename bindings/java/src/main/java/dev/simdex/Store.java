package dev.simdex;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.nio.charset.StandardCharsets;

/**
 * A store of (fingerprint, id) pairs, or of documents: writes are durable as its sync policy
 * says, queries are exact. Safe for concurrent use; {@link #close} syncs and waits for the calls
 * in flight. Long calls take a {@link Cancel} (or null).
 */
public final class Store extends Handle {
    /** Pass as k for the store's largest distance. */
    public static final int K_DEFAULT = -1;
    /** Ingest flag: compare with stored documents only, not the call's earlier ones. */
    public static final int STORE_ONLY = 1;

    private Store(Pointer p) {
        super(p);
    }

    /** Open (or, with create, create) the store at path. */
    public static Store open(String path, StoreOptions o) {
        Pointer opts = Native.simdex_store_options_new();
        try {
            PointerByReference err = new PointerByReference();
            Native.simdex_store_options_set_create(opts, o.create ? 1 : 0);
            Native.simdex_store_options_set_read_only(opts, o.readOnly ? 1 : 0);
            Native.simdex_store_options_set_documents(opts, o.documents ? 1 : 0);
            if (o.html != null) {
                Native.simdex_store_options_set_html(opts, o.html ? 1 : 0);
            }
            Native.simdex_store_options_set_exact(opts, o.exact);
            if (o.k != 0) {
                Native.simdex_store_options_set_k(opts, o.k);
            }
            if (o.maxDelta != 0) {
                Native.simdex_store_options_set_max_delta(opts, o.maxDelta);
            }
            if (o.expectedKeys != 0) {
                Native.simdex_store_options_set_expected_keys(opts, o.expectedKeys);
            }
            if (o.shingle != 0) {
                Native.simdex_store_options_set_shingle(opts, o.shingle);
            }
            if (o.sync != null) {
                Native.check(Native.simdex_store_options_set_sync(opts, Native.cString(o.sync), err), err);
            }
            if (o.sample != null) {
                Memory m = Native.strs(o.sample);
                Native.check(Native.simdex_store_options_add_sample(opts, m, o.sample.length, err), err);
            }
            PointerByReference out = new PointerByReference();
            Native.check(Native.simdex_store_open(Native.cString(path), opts, out, err), err);
            return new Store(out.getValue());
        } finally {
            Native.simdex_store_options_free(opts);
        }
    }

    @Override
    void free(Pointer p) {
        PointerByReference err = new PointerByReference();
        Native.check(Native.simdex_store_close(p, err), err);
    }

    /** Store fingerprints[i] for document ids[i]. */
    public void insert(long[] fingerprints, long[] ids, Cancel cancel) {
        if (fingerprints.length != ids.length) {
            throw new SimdexException(SimdexException.INVALID_ARGUMENT,
                    "fingerprints and ids differ in length");
        }
        Pointer p = enter();
        try {
            PointerByReference err = new PointerByReference();
            Native.check(Native.simdex_store_insert(p, fingerprints, ids, ids.length,
                    Cancel.of(cancel), err), err);
        } finally {
            leave();
        }
    }

    /** Delete every pair of each document id. */
    public void delete(long[] ids, Cancel cancel) {
        Pointer p = enter();
        try {
            PointerByReference err = new PointerByReference();
            Native.check(Native.simdex_store_delete(p, ids, ids.length, Cancel.of(cancel), err), err);
        } finally {
            leave();
        }
    }

    /** The (fingerprint, distance, id) rows within k bits of fp, by distance, fingerprint, id. */
    public Matches near(long fp, int k) {
        Pointer p = enter();
        try {
            return Matches.of(true, (fps, ds, ids, cap, len, err) -> Native.simdex_store_near(p, fp, k, fps, ds, ids, cap, len, err));
        } finally {
            leave();
        }
    }

    /** Whether some stored fingerprint is within k bits of fp. */
    public boolean hasNear(long fp, int k) {
        Pointer p = enter();
        try {
            int[] found = new int[1];
            long[] err = new long[1];
            Native.check(Native.simdex_store_has_near(p, fp, k, found, err), err);
            return found[0] != 0;
        } finally {
            leave();
        }
    }

    /** The rows of many queries, on all cores. */
    public Rows nearMany(long[] fps, int k, Cancel cancel) {
        Pointer p = enter();
        try {
            PointerByReference out = new PointerByReference();
            PointerByReference err = new PointerByReference();
            Native.check(Native.simdex_store_near_many(p, fps, fps.length, k, Cancel.of(cancel),
                    out, err), err);
            return Rows.take(out.getValue());
        } finally {
            leave();
        }
    }

    /** Sync every write acknowledged so far to stable storage. */
    public void flush() {
        Pointer p = enter();
        try {
            PointerByReference err = new PointerByReference();
            Native.check(Native.simdex_store_flush(p, err), err);
        } finally {
            leave();
        }
    }

    /**
     * Build now what the first document check would build: an exact store's prefix index, read
     * from every stored set (seconds per million documents). A service calls it once after
     * opening, before it takes requests; answers are the same either way.
     */
    public void warm() {
        Pointer p = enter();
        try {
            PointerByReference err = new PointerByReference();
            Native.check(Native.simdex_store_warm(p, err), err);
        } finally {
            leave();
        }
    }

    /** Fold the in-memory delta into a new generation; false when there was nothing to fold. */
    public boolean compact(Cancel cancel) {
        Pointer p = enter();
        try {
            IntByReference done = new IntByReference();
            PointerByReference err = new PointerByReference();
            Native.check(Native.simdex_store_compact(p, Cancel.of(cancel), done, err), err);
            return done.getValue() != 0;
        } finally {
            leave();
        }
    }

    /** Sizes and state of the store. */
    public StoreStats stats() {
        Pointer p = enter();
        try {
            Memory m = new Memory(64);
            PointerByReference err = new PointerByReference();
            Native.check(Native.simdex_store_get_stats(p, m, err), err);
            return new StoreStats(m);
        } finally {
            leave();
        }
    }

    /**
     * Check each document (ids[i], texts[i]) against everything stored before it and store the
     * new ones; a document under a stored id replaces it. verify: the Jaccard similarity a
     * duplicate must reach (NaN: none); k: candidates' distance (K_DEFAULT); flags: 0 or
     * STORE_ONLY.
     */
    public Verdict[] ingest(String[] ids, String[] texts, double verify, int k, int flags,
            Cancel cancel) {
        return documents(ids, texts, verify, k, flags, cancel, true);
    }

    /** The verdicts ingest would give, storing nothing. */
    public Verdict[] check(String[] ids, String[] texts, double verify, int k, int flags,
            Cancel cancel) {
        return documents(ids, texts, verify, k, flags, cancel, false);
    }

    private Verdict[] documents(String[] ids, String[] texts, double verify, int k, int flags,
            Cancel cancel, boolean write) {
        if (ids.length != texts.length) {
            throw new SimdexException(SimdexException.INVALID_ARGUMENT,
                    "ids and texts differ in length");
        }
        Memory ci = Native.strs(ids);
        Memory ct = Native.strs(texts);
        Pointer p = enter();
        try {
            PointerByReference out = new PointerByReference();
            PointerByReference err = new PointerByReference();
            int st = write
                    ? Native.simdex_store_ingest(p, ci, ct, ids.length, verify, k, flags, Cancel.of(cancel), out, err)
                    : Native.simdex_store_check(p, ci, ct, ids.length, verify, k, flags, Cancel.of(cancel), out, err);
            Native.check(st, err);
            return Verdict.take(out.getValue());
        } finally {
            leave();
        }
    }

    /** Delete documents by the ids they were ingested under; how many were stored. */
    public long deleteDocuments(String[] ids, Cancel cancel) {
        Memory ci = Native.strs(ids);
        Pointer p = enter();
        try {
            LongByReference deleted = new LongByReference();
            PointerByReference err = new PointerByReference();
            Native.check(Native.simdex_store_delete_documents(p, ci, ids.length, Cancel.of(cancel),
                    deleted, err), err);
            return deleted.getValue();
        } finally {
            leave();
        }
    }

    /**
     * The id a document was ingested under, for the store id a query returned ({@link #near}
     * and {@link #nearMany} answer with store ids), or null when no document is stored under it.
     */
    public String documentId(long id) {
        Pointer p = enter();
        try {
            byte[] buf = new byte[64];
            while (true) {
                long[] len = new long[1];
                int[] found = new int[1];
                long[] err = new long[1];
                Native.check(Native.simdex_store_document_id(p, id, buf, buf.length, len, found, err), err);
                if (found[0] == 0) {
                    return null;
                }
                if (len[0] <= buf.length) {
                    return new String(buf, 0, (int) len[0], StandardCharsets.UTF_8);
                }
                buf = new byte[(int) len[0]];
            }
        } finally {
            leave();
        }
    }

    /**
     * Delete every document stored before {@code t} (by the writer's clock; a document ingested
     * again was stored then); how many. Only a store created with exact verification knows when
     * its documents were stored: elsewhere this throws (delete by id instead). The next compaction
     * reclaims their space.
     */
    public long expireBefore(java.time.Instant t) {
        return expire(1, Math.max(0, t.toEpochMilli()));
    }

    /** Delete every document whose sequence number (1, 2, ... as stored) is below seq; how many. */
    public long expireSeqBelow(long seq) {
        return expire(2, seq);
    }

    private long expire(int by, long bound) {
        Pointer p = enter();
        try {
            LongByReference n = new LongByReference();
            PointerByReference err = new PointerByReference();
            Native.check(Native.simdex_store_expire(p, by, bound, n, err), err);
            return n.getValue();
        } finally {
            leave();
        }
    }

    /**
     * The fingerprint this document store gives text (the one ingest stores), or null for a
     * text without words.
     */
    public Long simhash(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        Pointer p = enter();
        try {
            LongByReference fp = new LongByReference();
            IntByReference words = new IntByReference();
            PointerByReference err = new PointerByReference();
            Native.check(Native.simdex_store_simhash(p, b, b.length, fp, words, err), err);
            return words.getValue() == 0 ? null : fp.getValue();
        } finally {
            leave();
        }
    }
}
