package dev.simdex;

import com.sun.jna.Pointer;
import java.nio.charset.StandardCharsets;

/** The answer for one document of an ingest or check. */
public final class Verdict {
    /** What was decided. */
    public enum Kind {
        /** Nothing stored before it is a near-duplicate (ingest stored it). */
        NEW,
        /** A near-duplicate of the stored document {@link #matched}. */
        DUPLICATE,
        /** A document without words: nobody's duplicate, and not stored. */
        EMPTY,
        /** The same document is stored under this id already (a retried call). */
        ALREADY_STORED
    }

    /** What was decided. */
    public final Kind kind;
    /** A duplicate's match: the stored document's id (null otherwise). */
    public final String matched;
    /** A duplicate's Jaccard similarity with its match (NaN otherwise). */
    public final double similarity;
    /** A duplicate's Hamming distance to its match (-1 otherwise). */
    public final int distance;

    Verdict(Kind kind, String matched, double similarity, int distance) {
        this.kind = kind;
        this.matched = matched;
        this.similarity = similarity;
        this.distance = distance;
    }

    /** Copy a library-owned simdex_verdicts and free it. */
    static Verdict[] take(Pointer v) {
        try {
            int n = (int) v.getLong(0);
            Verdict[] out = new Verdict[n];
            if (n == 0) {
                return out;
            }
            int[] kinds = v.getPointer(8).getIntArray(0, n);
            double[] sims = v.getPointer(16).getDoubleArray(0, n);
            int[] dists = v.getPointer(24).getIntArray(0, n);
            Pointer matched = v.getPointer(32);
            Kind[] all = Kind.values();
            for (int i = 0; i < n; i++) {
                String m = null;
                long len = matched.getLong(16L * i + 8);
                if (len > 0) {
                    byte[] b = matched.getPointer(16L * i).getByteArray(0, (int) len);
                    m = new String(b, StandardCharsets.UTF_8);
                }
                out[i] = new Verdict(all[kinds[i]], m, sims[i], dists[i]);
            }
            return out;
        } finally {
            Native.simdex_verdicts_free(v);
        }
    }
}
