package dev.simdex;

import com.sun.jna.Pointer;

/**
 * The answers to a batch of queries, as columns: the rows of query q are offsets[q] to
 * offsets[q + 1] of fingerprints, distances and ids (ids null for an index), by distance,
 * then fingerprint, then id.
 */
public final class Rows {
    /** queries + 1 ascending offsets. */
    public final long[] offsets;
    /** Each row's stored fingerprint. */
    public final long[] fingerprints;
    /** Each row's Hamming distance to its query. */
    public final int[] distances;
    /** Each row's document id (a store's rows), or null (an index's). */
    public final long[] ids;

    Rows(long[] offsets, long[] fingerprints, int[] distances, long[] ids) {
        this.offsets = offsets;
        this.fingerprints = fingerprints;
        this.distances = distances;
        this.ids = ids;
    }

    /** Number of rows. */
    public int size() {
        return fingerprints.length;
    }

    /** Copy a library-owned simdex_rows (one copy per column) and free it. */
    static Rows take(Pointer r) {
        try {
            int queries = (int) r.getLong(0);
            int n = (int) r.getLong(8);
            long[] offsets = r.getPointer(16).getLongArray(0, queries + 1);
            long[] fps = n == 0 ? new long[0] : r.getPointer(24).getLongArray(0, n);
            int[] ds = n == 0 ? new int[0] : r.getPointer(32).getIntArray(0, n);
            Pointer ip = r.getPointer(40);
            long[] ids = ip == null ? null : n == 0 ? new long[0] : ip.getLongArray(0, n);
            return new Rows(offsets, fps, ds, ids);
        } finally {
            Native.simdex_rows_free(r);
        }
    }
}
