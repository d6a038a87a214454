package dev.simdex;

import com.sun.jna.Pointer;

/** Sizes and state of a store (simdex_store_stats). */
public final class StoreStats {
    /** The live generation's number. */
    public final long generation;
    /** The largest distance the design answers. */
    public final int k;
    /** Whether it is a document store. */
    public final boolean documentStore;
    /** Distinct fingerprints in the live generation. */
    public final long fingerprints;
    /** (fingerprint, id) pairs in the live generation. */
    public final long pairs;
    /** Pairs written since (in the delta). */
    public final long deltaPairs;
    /** Ids deleted since. */
    public final long deltaDeletes;
    /** Documents stored. */
    public final long documents;
    /** Bytes on disk. */
    public final long diskBytes;

    StoreStats(Pointer m) {
        generation = m.getLong(0);
        k = m.getInt(8);
        documentStore = m.getInt(12) != 0;
        fingerprints = m.getLong(16);
        pairs = m.getLong(24);
        deltaPairs = m.getLong(32);
        deltaDeletes = m.getLong(40);
        documents = m.getLong(48);
        diskBytes = m.getLong(56);
    }
}
