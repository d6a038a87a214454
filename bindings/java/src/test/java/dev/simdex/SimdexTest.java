package dev.simdex;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SimdexTest {
    @TempDir
    Path tmp;

    static long seed;

    static long splitmix64() {
        seed += 0x9E3779B97F4A7C15L;
        long z = seed;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static SimdexException code(int code, Runnable r) {
        SimdexException e = assertThrows(SimdexException.class, r::run);
        assertEquals(code, e.code(), e.getMessage());
        return e;
    }

    @Test
    void indexAnswersAsBruteForce() {
        seed = 3;
        long[] fps = new long[20000];
        for (int i = 0; i < fps.length; i++) {
            fps[i] = i % 4 == 3 ? fps[i - 1] ^ (1L << Long.remainderUnsigned(splitmix64(), 64)) : splitmix64();
        }
        String dir = tmp.resolve("index").toString();
        Index.build(dir, fps, 3, null);
        code(SimdexException.IO, () -> Index.build(dir, fps, 3, null));
        Set<Long> uniq = new HashSet<>();
        for (long f : fps) {
            uniq.add(f);
        }
        for (int flags : new int[] {0, Index.IN_MEMORY}) {
            Index ix = Index.open(dir, flags);
            {
                assertEquals(uniq.size(), ix.size());
                IndexStats st = ix.stats();
                assertEquals(3, st.k);
                assertTrue(st.tables > 0 && st.blockSize > 0 && st.diskBytes > 0, "stats");
                long[] queries = new long[300];
                for (int q = 0; q < queries.length; q++) {
                    queries[q] = fps[(q * 61) % fps.length] ^ ((long) (q % 3) << (q % 60));
                    Matches m = ix.near(queries[q], 3);
                    int want = 0;
                    for (long f : uniq) {
                        want += Long.bitCount(f ^ queries[q]) <= 3 ? 1 : 0;
                    }
                    assertEquals(want, m.size());
                    for (int i = 0; i < m.size(); i++) {
                        assertEquals(Long.bitCount(m.fingerprints[i] ^ queries[q]), m.distances[i]);
                    }
                    assertEquals(want > 0, ix.hasNear(queries[q], 3));
                }
                Rows rows = ix.nearMany(queries, Index.K_DEFAULT, null);
                assertNull(rows.ids);
                for (int q = 0; q < queries.length; q++) {
                    Matches m = ix.near(queries[q], 3);
                    int a = (int) rows.offsets[q], b = (int) rows.offsets[q + 1];
                    assertArrayEquals(m.fingerprints, Arrays.copyOfRange(rows.fingerprints, a, b));
                    assertArrayEquals(m.distances, Arrays.copyOfRange(rows.distances, a, b));
                }
                SimdexException e = code(SimdexException.INVALID_ARGUMENT, () -> ix.near(1, 40));
                assertTrue(e.getMessage().contains("40"), e.getMessage());
                try (Cancel c = new Cancel()) {
                    c.cancel();
                    code(SimdexException.CANCELLED, () -> ix.nearMany(queries, 3, c));
                }
                ix.close();
                code(SimdexException.CLOSED, () -> ix.near(1, 3));
                ix.close(); // a second close does nothing
            }
        }
        code(SimdexException.IO, () -> Index.open(tmp.resolve("missing").toString(), 0));
        code(SimdexException.INVALID_ARGUMENT, () -> Index.open(dir, 64));
    }

    @Test
    void storeWritesDeletesAndReopens() {
        String dir = tmp.resolve("store").toString();
        seed = 9;
        long[] fps = new long[10000];
        long[] ids = new long[10000];
        for (int i = 0; i < fps.length; i++) {
            fps[i] = splitmix64();
            ids[i] = i;
        }
        try (Store s = Store.open(dir, new StoreOptions().create(true).k(3).expectedKeys(100000))) {
            s.insert(fps, ids, null);
            code(SimdexException.LOCKED, () -> Store.open(dir, new StoreOptions()));
            try (Store r = Store.open(dir, new StoreOptions().readOnly(true))) {
                code(SimdexException.INVALID_ARGUMENT, () -> r.insert(fps, ids, null));
                Matches m = r.near(fps[5] ^ 3, 3);
                assertEquals(1, m.size());
                assertEquals(5, m.ids[0]);
                assertEquals(2, m.distances[0]);
            }
            s.delete(Arrays.copyOf(ids, 5000), null);
            assertTrue(s.compact(null));
            assertFalse(s.compact(null));
            StoreStats st = s.stats();
            assertEquals(5000, st.pairs);
            assertEquals(0, st.deltaPairs);
            assertFalse(st.documentStore);
            assertEquals(5000, s.nearMany(fps, 0, null).size());
            code(SimdexException.INVALID_ARGUMENT, () -> s.insert(fps, new long[1], null));
            try (Cancel c = new Cancel()) {
                c.cancel();
                code(SimdexException.CANCELLED, () -> s.insert(fps, ids, c));
            }
        }
        try (Store s = Store.open(dir, new StoreOptions().k(3))) {
            for (int i = 0; i < 10000; i += 97) {
                assertEquals(i >= 5000, s.hasNear(fps[i], 0));
            }
        }
        code(SimdexException.INVALID_ARGUMENT, () -> Store.open(dir, new StoreOptions().k(5)));
        code(SimdexException.INVALID_ARGUMENT,
                () -> Store.open(dir + "x", new StoreOptions().create(true).sync("sometimes")));
    }

    /** The shared corpus (bindings/c/tests/corpus.md). */
    static String corpusText(long i) {
        if (i % 997 == 996) {
            return "";
        }
        seed = (i / 4) * 0x100000001B3L + 1;
        long[] words = new long[80];
        for (int j = 0; j < 80; j++) {
            words[j] = Long.remainderUnsigned(splitmix64(), 5000);
        }
        seed = i ^ 0xABCDEF;
        for (long e = 0; e < i % 4; e++) {
            long r = splitmix64();
            words[(int) Long.remainderUnsigned(r, 80)] = Long.remainderUnsigned(r >>> 20, 5000);
        }
        StringBuilder b = new StringBuilder();
        for (int j = 0; j < 80; j++) {
            b.append(j > 0 ? " w" : "w").append(words[j]);
        }
        return b.toString();
    }

    static long digest(long h, Verdict[] vs) {
        List<byte[]> parts = new ArrayList<>();
        for (Verdict v : vs) {
            int d = v.distance;
            parts.add(new byte[] {(byte) v.kind.ordinal(), (byte) d, (byte) (d >> 8), (byte) (d >> 16), (byte) (d >> 24)});
            parts.add(v.matched == null ? new byte[0] : v.matched.getBytes(StandardCharsets.UTF_8));
            parts.add(new byte[] {(byte) 0xFF});
            assertEquals(v.kind == Verdict.Kind.DUPLICATE, !Double.isNaN(v.similarity));
        }
        for (byte[] p : parts) {
            for (byte c : p) {
                h = (h ^ (c & 0xFF)) * 0x100000001b3L;
            }
        }
        return h;
    }

    static long runDocs(Store s, String prefix, int from, int to, boolean write) {
        long h = 0xcbf29ce484222325L;
        for (int start = from; start < to; start += 10000) {
            int end = Math.min(start + 10000, to);
            String[] ids = new String[end - start];
            String[] texts = new String[end - start];
            for (int i = start; i < end; i++) {
                ids[i - start] = prefix + i;
                texts[i - start] = corpusText(i);
            }
            Verdict[] vs = write
                    ? s.ingest(ids, texts, 0.85, Store.K_DEFAULT, 0, null)
                    : s.check(ids, texts, 0.85, Store.K_DEFAULT, 0, null);
            h = digest(h, vs);
        }
        return h;
    }

    @Test
    void documentStoreGivesTheRustAnswers() {
        String dir = tmp.resolve("docs").toString();
        try (Store s = Store.open(dir, new StoreOptions().create(true).documents(true).shingle(2).exact(0.8))) {
            assertEquals(0x09b5b283896081e6L, runDocs(s, "doc-", 0, 100000, true));
            assertEquals(0x6b06e1bbf7334ec6L, runDocs(s, "new-", 0, 1000, false));
            Long fp = s.simhash(corpusText(0));
            assertTrue(s.hasNear(fp, 0));
            boolean named = false;
            for (long id : s.near(fp, 0).ids) {
                named |= "doc-0".equals(s.documentId(id));
            }
            assertTrue(named, "doc-0 among its fingerprint's documents");
            assertNull(s.documentId(0xdeadbeefcafeL));
            assertNull(s.simhash(""));
            String longId = "x".repeat(3000);
            code(SimdexException.INVALID_ARGUMENT,
                    () -> s.ingest(new String[] {longId}, new String[] {"a b c"}, Double.NaN, Store.K_DEFAULT, 0, null));
            String[] ids = new String[1000];
            for (int i = 0; i < 1000; i++) {
                ids[i] = "doc-" + i;
            }
            assertEquals(489, s.deleteDocuments(ids, null));
            s.compact(null);
            assertTrue(s.stats().documentStore);
        }
        try (Store s = Store.open(dir, new StoreOptions())) {
            s.warm(); // the prefix index built up front: the same answers
            assertEquals(0x2119b88688d9bbd6L, runDocs(s, "new-", 0, 1000, false));
            long stored = s.stats().documents;
            long first = s.expireSeqBelow(2000);
            assertTrue(first > 0 && first < 2000, "expired " + first);
            long rest = s.expireBefore(java.time.Instant.now().plusSeconds(3600));
            assertEquals(stored, first + rest);
            s.compact(null);
            assertEquals(0, s.stats().documents);
        }
    }

    @Test
    void eightReadersBesideAWriter() throws Exception {
        seed = 1;
        long[] base = new long[20000];
        long[] ids = new long[20000];
        for (int i = 0; i < base.length; i++) {
            base[i] = splitmix64();
            ids[i] = i;
        }
        try (Store s = Store.open(tmp.resolve("s").toString(), new StoreOptions().create(true).k(3))) {
            s.insert(base, ids, null);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            Thread[] readers = new Thread[8];
            java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
            for (int r = 0; r < readers.length; r++) {
                final int me = r;
                readers[r] = new Thread(() -> {
                    try {
                        java.util.Random rnd = new java.util.Random(me);
                        for (int n = 0; !done.get() || n < 100; n++) {
                            int i = rnd.nextInt(base.length);
                            Matches m = s.near(base[i], 0);
                            assertEquals(1, m.size());
                            assertEquals(i, m.ids[0]);
                        }
                    } catch (Throwable t) {
                        failed.set(t);
                    }
                });
                readers[r].start();
            }
            long w = 77;
            for (int b = 0; b < 20; b++) {
                long[] f = new long[1000];
                long[] i = new long[1000];
                for (int j = 0; j < 1000; j++) {
                    w += 0x9E3779B97F4A7C15L;
                    f[j] = w * 0xBF58476D1CE4E5B9L;
                    i[j] = 100000 + b * 1000 + j;
                }
                s.insert(f, i, null);
                if (b % 5 == 4) {
                    s.compact(null);
                }
            }
            done.set(true);
            for (Thread t : readers) {
                t.join();
            }
            if (failed.get() != null) {
                throw new AssertionError(failed.get());
            }
            StoreStats st = s.stats();
            assertEquals(40000, st.pairs + st.deltaPairs);
        }
    }
}
