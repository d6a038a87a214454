package dev.simdex;

/**
 * How a store is opened, and how a new one is created. The defaults open an existing store for
 * reading and writing, every write durable when its call returns.
 */
public final class StoreOptions {
    boolean create;
    boolean readOnly;
    int k;
    String sync;
    long maxDelta;
    long expectedKeys;
    boolean documents;
    int shingle;
    Boolean html;
    double exact = Double.NaN;
    String[] sample;

    /** Create the store when the path holds none. */
    public StoreOptions create(boolean v) {
        create = v;
        return this;
    }

    /** Open read-only, beside a writer in another process; writes fail. */
    public StoreOptions readOnly(boolean v) {
        readOnly = v;
        return this;
    }

    /** A new store's largest query distance (default 3); another k than a store's fails. */
    public StoreOptions k(int v) {
        k = v;
        return this;
    }

    /** When writes are durable: "per-write" (default), "group:&lt;ms&gt;" or "manual". */
    public StoreOptions sync(String v) {
        sync = v;
        return this;
    }

    /** Compact when the in-memory delta holds this many writes (default 2^20). */
    public StoreOptions maxDelta(long v) {
        maxDelta = v;
        return this;
    }

    /** Fingerprints a new store grows to, for its design (default 10M). */
    public StoreOptions expectedKeys(long v) {
        expectedKeys = v;
        return this;
    }

    /** Create a document store: texts under string ids. */
    public StoreOptions documents(boolean v) {
        documents = v;
        return this;
    }

    /** A new document store's shingle size in words (default 2). */
    public StoreOptions shingle(int v) {
        shingle = v;
        return this;
    }

    /** A new document store's texts are HTML pages. */
    public StoreOptions html(boolean v) {
        html = v;
        return this;
    }

    /** Keep shingle sets, so that verification at this threshold or above is exact. */
    public StoreOptions exact(double v) {
        exact = v;
        return this;
    }

    /** Texts a new document store learns its weights and shingle order from. */
    public StoreOptions sample(String... v) {
        sample = v.clone();
        return this;
    }
}
