package dev.simdex;

/** An error the engine reported: its code (a SIMDEX_ERR_ value of simdex.h) and message. */
public class SimdexException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** An argument is invalid (NULL, not UTF-8, out of range, a read-only store written). */
    public static final int INVALID_ARGUMENT = 1;
    /** An operating-system call failed. */
    public static final int IO = 2;
    /** Bytes on disk are not a valid simdex structure. */
    public static final int CORRUPT = 3;
    /** A format version or codec this library cannot read. */
    public static final int UNSUPPORTED = 4;
    /** Input could not be parsed. */
    public static final int PARSE = 5;
    /** Another process or handle holds the store's writer lock. */
    public static final int LOCKED = 6;
    /** An earlier write failed: the store refuses writes until reopened. */
    public static final int POISONED = 7;
    /** A forked process wrote through its parent's handle. */
    public static final int FORKED = 8;
    /** The call was cancelled. */
    public static final int CANCELLED = 9;
    /** The loaded library implements another ABI than this package. */
    public static final int VERSION = 10;
    /** A bug in simdex, caught at the boundary. */
    public static final int INTERNAL = 11;
    /** The handle was closed (raised by this package). */
    public static final int CLOSED = 1000;

    private final int code;

    SimdexException(int code, String message) {
        super(message);
        this.code = code;
    }

    /** The error's code: one of the constants of this class. */
    public int code() {
        return code;
    }
}
