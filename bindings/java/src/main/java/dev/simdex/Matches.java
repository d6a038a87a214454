package dev.simdex;

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
}
