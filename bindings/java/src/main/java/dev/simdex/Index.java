package dev.simdex;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

/**
 * An index open read-only: "which stored fingerprints are within k bits of this one?",
 * answered exactly. Safe for concurrent use; {@link #close} waits for the calls in flight.
 */
public final class Index extends Handle {
    /** Read the index whole at open instead of mapping it. */
    public static final int IN_MEMORY = 1;
    /** Map the index and read it into the page cache at open. */
    public static final int POPULATE = 2;
    /** Pass as k for the largest distance the index answers. */
    public static final int K_DEFAULT = -1;

    private Index(Pointer p) {
        super(p);
    }

    /** The loaded library's version. */
    public static String version() {
        return Native.simdex_version().getString(0, "UTF-8");
    }

    /**
     * Build an index at path (which must not exist) from fingerprints in any order, for queries
     * within k bits. A failed or cancelled build leaves nothing.
     */
    public static void build(String path, long[] fingerprints, int k, Cancel cancel) {
        PointerByReference err = new PointerByReference();
        Native.check(Native.simdex_index_build(Native.cString(path), fingerprints,
                fingerprints.length, k, Cancel.of(cancel), err), err);
    }

    /** Open the index at path; flags 0 or IN_MEMORY and/or POPULATE. */
    public static Index open(String path, int flags) {
        PointerByReference out = new PointerByReference();
        PointerByReference err = new PointerByReference();
        Native.check(Native.simdex_index_open(Native.cString(path), flags, out, err), err);
        return new Index(out.getValue());
    }

    @Override
    void free(Pointer p) {
        Native.simdex_index_close(p);
    }

    /** Every stored fingerprint within k bits of fp, by distance then value. */
    public Matches near(long fp, int k) {
        Pointer p = enter();
        try {
            return Matches.of(false, (fps, ds, ids, cap, len, err) -> Native.simdex_index_near(p, fp, k, fps, ds, cap, len, err));
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
            Native.check(Native.simdex_index_has_near(p, fp, k, found, err), err);
            return found[0] != 0;
        } finally {
            leave();
        }
    }

    /** The matches of many queries, on all cores. */
    public Rows nearMany(long[] fps, int k, Cancel cancel) {
        Pointer p = enter();
        try {
            PointerByReference out = new PointerByReference();
            PointerByReference err = new PointerByReference();
            Native.check(Native.simdex_index_near_many(p, fps, fps.length, k, Cancel.of(cancel),
                    out, err), err);
            return Rows.take(out.getValue());
        } finally {
            leave();
        }
    }

    /** Sizes of the index. */
    public IndexStats stats() {
        Pointer p = enter();
        try {
            Memory m = new Memory(64);
            PointerByReference err = new PointerByReference();
            Native.check(Native.simdex_index_get_stats(p, m, err), err);
            return new IndexStats(m);
        } finally {
            leave();
        }
    }

    /** Fingerprints stored (distinct). */
    public long size() {
        return stats().keys;
    }
}
