package dev.simdex;

import java.util.Arrays;

/** The answers to one query, as columns (ids null for an index). */
public final class Matches {
    /** The stored fingerprints, by distance then value. */
    public final long[] fingerprints;
    /** Their Hamming distances to the query. */
    public final int[] distances;
    /** Their document ids (a store's), or null (an index's). */
    public final long[] ids;

    Matches(long[] fingerprints, int[] distances, long[] ids) {
        this.fingerprints = fingerprints;
        this.distances = distances;
        this.ids = ids;
    }

    /** Number of matches. */
    public int size() {
        return fingerprints.length;
    }

    /** One single-query call of the library into arrays of capacity cap; sets len[0]. */
    interface Call {
        int run(long[] fps, int[] ds, long[] ids, long cap, long[] len, long[] err);
    }

    /**
     * Run call into arrays of 16, again at the full count when they were too small, and keep the
     * answers at their size (ids only withIds).
     */
    static Matches of(boolean withIds, Call call) {
        int cap = 16;
        while (true) {
            long[] fps = new long[cap];
            int[] ds = new int[cap];
            long[] ids = withIds ? new long[cap] : null;
            long[] len = new long[1];
            long[] err = new long[1];
            Native.check(call.run(fps, ds, ids, cap, len, err), err);
            int n = (int) len[0];
            if (n <= cap) {
                return new Matches(Arrays.copyOf(fps, n), Arrays.copyOf(ds, n),
                        withIds ? Arrays.copyOf(ids, n) : null);
            }
            cap = n;
        }
    }
}
