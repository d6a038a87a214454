package dev.simdex;

import com.sun.jna.Pointer;

/**
 * A cancel token: give it to long calls, and {@link #cancel} it from any thread to stop them
 * (they throw a {@link SimdexException} with code CANCELLED). Close it once no call uses it.
 */
public final class Cancel extends Handle {
    /** A token, not set. */
    public Cancel() {
        super(Native.simdex_cancel_new());
    }

    /** Stop the calls running with this token, and later ones given it. */
    public void cancel() {
        Pointer p = enter();
        try {
            Native.simdex_cancel_set(p);
        } finally {
            leave();
        }
    }

    @Override
    void free(Pointer p) {
        Native.simdex_cancel_free(p);
    }

    static Pointer of(Cancel c) {
        return c == null ? null : c.peek();
    }

    private Pointer peek() {
        Pointer p = enter();
        leave();
        return p;
    }
}
