package dev.simdex;

import com.sun.jna.Pointer;

/** Sizes of an index (simdex_index_stats). */
public final class IndexStats {
    /** Fingerprints stored (distinct). */
    public final long keys;
    /** The largest distance the design answers. */
    public final int k;
    /** Permuted tables. */
    public final int tables;
    /** Fingerprints per block. */
    public final int blockSize;
    /** Bytes of the table files. */
    public final long diskBytes;
    /** Bytes the index holds in memory (the block-key arrays; the tables are mapped). */
    public final long memoryBytes;

    IndexStats(Pointer m) {
        keys = m.getLong(0);
        k = m.getInt(8);
        tables = m.getInt(12);
        blockSize = m.getInt(16);
        diskBytes = m.getLong(24);
        memoryBytes = m.getLong(32);
    }
}
