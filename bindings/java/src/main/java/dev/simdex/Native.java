package dev.simdex;

import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.nio.charset.StandardCharsets;

/**
 * The C functions of libsimdex (simdex.h), bound by JNA's direct mapping, and the helpers that
 * turn their statuses into exceptions. size_t is a Java long: 64-bit platforms only.
 */
final class Native {
    private Native() {}

    /** The ABI version of simdex.h this package was written against. */
    static final int ABI_VERSION = 1;

    static {
        com.sun.jna.Native.register(Native.class, NativeLibrary.getInstance("simdex"));
        PointerByReference err = new PointerByReference();
        check(simdex_check_version(ABI_VERSION, err), err);
    }

    static native Pointer simdex_version();
    static native int simdex_check_version(int headerAbiVersion, PointerByReference err);
    static native void simdex_string_free(Pointer s);

    static native Pointer simdex_cancel_new();
    static native int simdex_cancel_set(Pointer token);
    static native void simdex_cancel_free(Pointer token);

    static native void simdex_rows_free(Pointer rows);
    static native void simdex_verdicts_free(Pointer verdicts);

    static native int simdex_index_build(byte[] path, long[] fps, long n, int k, Pointer cancel,
            PointerByReference err);
    static native int simdex_index_open(byte[] path, int flags, PointerByReference out,
            PointerByReference err);
    static native int simdex_index_close(Pointer index);
    // The single queries take their out-parameters as one-element arrays: JNA passes primitive
    // arrays without the native allocation a ByReference makes (about a microsecond a call).
    static native int simdex_index_near(Pointer index, long fp, int k, long[] fps, int[] dists,
            long cap, long[] len, long[] err);
    static native int simdex_index_has_near(Pointer index, long fp, int k, int[] found,
            long[] err);
    static native int simdex_index_near_many(Pointer index, long[] fps, long n, int k,
            Pointer cancel, PointerByReference out, PointerByReference err);
    static native int simdex_index_get_stats(Pointer index, Pointer out, PointerByReference err);

    static native Pointer simdex_store_options_new();
    static native void simdex_store_options_free(Pointer opts);
    static native int simdex_store_options_set_create(Pointer opts, int v);
    static native int simdex_store_options_set_read_only(Pointer opts, int v);
    static native int simdex_store_options_set_k(Pointer opts, int k);
    static native int simdex_store_options_set_sync(Pointer opts, byte[] policy,
            PointerByReference err);
    static native int simdex_store_options_set_max_delta(Pointer opts, long v);
    static native int simdex_store_options_set_expected_keys(Pointer opts, long v);
    static native int simdex_store_options_set_documents(Pointer opts, int v);
    static native int simdex_store_options_set_shingle(Pointer opts, int v);
    static native int simdex_store_options_set_html(Pointer opts, int v);
    static native int simdex_store_options_set_exact(Pointer opts, double t);
    static native int simdex_store_options_add_sample(Pointer opts, Pointer texts, long n,
            PointerByReference err);

    static native int simdex_store_open(byte[] path, Pointer opts, PointerByReference out,
            PointerByReference err);
    static native int simdex_store_close(Pointer store, PointerByReference err);
    static native int simdex_store_insert(Pointer store, long[] fps, long[] ids, long n,
            Pointer cancel, PointerByReference err);
    static native int simdex_store_delete(Pointer store, long[] ids, long n, Pointer cancel,
            PointerByReference err);
    static native int simdex_store_near(Pointer store, long fp, int k, long[] fps, int[] dists,
            long[] ids, long cap, long[] len, long[] err);
    static native int simdex_store_has_near(Pointer store, long fp, int k, int[] found,
            long[] err);
    static native int simdex_store_near_many(Pointer store, long[] fps, long n, int k,
            Pointer cancel, PointerByReference out, PointerByReference err);
    static native int simdex_store_flush(Pointer store, PointerByReference err);
    static native int simdex_store_warm(Pointer store, PointerByReference err);
    static native int simdex_store_compact(Pointer store, Pointer cancel, IntByReference done,
            PointerByReference err);
    static native int simdex_store_get_stats(Pointer store, Pointer out, PointerByReference err);
    static native int simdex_store_ingest(Pointer store, Pointer ids, Pointer texts, long n,
            double verify, int k, int flags, Pointer cancel, PointerByReference out,
            PointerByReference err);
    static native int simdex_store_check(Pointer store, Pointer ids, Pointer texts, long n,
            double verify, int k, int flags, Pointer cancel, PointerByReference out,
            PointerByReference err);
    static native int simdex_store_delete_documents(Pointer store, Pointer ids, long n,
            Pointer cancel, LongByReference deleted, PointerByReference err);
    static native int simdex_store_document_id(Pointer store, long id, byte[] buf, long cap,
            long[] len, int[] found, long[] err);
    static native int simdex_store_expire(Pointer store, int by, long bound, LongByReference expired,
            PointerByReference err);
    static native int simdex_store_simhash(Pointer store, byte[] text, long len,
            LongByReference fp, IntByReference hasWords, PointerByReference err);

    /** Throw the engine's error for a status other than SIMDEX_OK, freeing its message. */
    static void check(int status, PointerByReference err) {
        if (status == 0) {
            return;
        }
        String message = "error " + status;
        Pointer p = err.getValue();
        if (p != null) {
            message = p.getString(0, "UTF-8");
            simdex_string_free(p);
        }
        throw new SimdexException(status, message);
    }

    /** {@link #check} for an error message passed back in a one-element array. */
    static void check(int status, long[] err) {
        if (status == 0) {
            return;
        }
        String message = "error " + status;
        if (err[0] != 0) {
            Pointer p = new Pointer(err[0]);
            message = p.getString(0, "UTF-8");
            simdex_string_free(p);
        }
        throw new SimdexException(status, message);
    }

    /** A NUL-terminated UTF-8 copy of a string, for a C path or policy. */
    static byte[] cString(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[b.length + 1];
        System.arraycopy(b, 0, out, 0, b.length);
        return out;
    }

    /** Strings as a C simdex_str array followed by their UTF-8 bytes, in one allocation. */
    static com.sun.jna.Memory strs(String[] v) {
        byte[][] bytes = new byte[v.length][];
        long total = 0;
        for (int i = 0; i < v.length; i++) {
            if (v[i] == null) {
                throw new SimdexException(1, "element " + i + " is null");
            }
            bytes[i] = v[i].getBytes(StandardCharsets.UTF_8);
            total += bytes[i].length;
        }
        long head = 16L * v.length;
        com.sun.jna.Memory m = new com.sun.jna.Memory(Math.max(1, head + total));
        long at = head;
        for (int i = 0; i < v.length; i++) {
            m.setPointer(16L * i, m.share(at));
            m.setLong(16L * i + 8, bytes[i].length);
            m.write(at, bytes[i], 0, bytes[i].length);
            at += bytes[i].length;
        }
        return m;
    }
}
