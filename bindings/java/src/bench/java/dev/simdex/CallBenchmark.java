package dev.simdex;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * The Java side of benches/bindings.sh: nearMany in batches of 1,000 and near one call at a
 * time, best of three rounds, printed as the Rust side does.
 *
 *     java -cp simdex.jar:jna.jar:bench dev.simdex.CallBenchmark INDEX_DIR QUERIES.u64
 */
public final class CallBenchmark {
    private CallBenchmark() {}

    public static void main(String[] args) throws Exception {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(Paths.get(args[1]))).order(ByteOrder.LITTLE_ENDIAN);
        long[] qs = new long[b.capacity() / 8];
        b.asLongBuffer().get(qs);
        double batch = Double.MAX_VALUE;
        double single = Double.MAX_VALUE;
        long rows = 0;
        try (Index ix = Index.open(args[0], 0)) {
            for (int round = 0; round < 3; round++) {
                long t = System.nanoTime();
                for (int i = 0; i < qs.length; i += 1000) {
                    long[] chunk = java.util.Arrays.copyOfRange(qs, i, Math.min(i + 1000, qs.length));
                    rows += ix.nearMany(chunk, 3, null).size();
                }
                batch = Math.min(batch, (System.nanoTime() - t) / (double) qs.length);
                t = System.nanoTime();
                for (long q : qs) {
                    rows += ix.near(q, 3).size();
                }
                single = Math.min(single, (System.nanoTime() - t) / (double) qs.length);
            }
        }
        if (rows == 0) {
            throw new AssertionError("the queries matched nothing");
        }
        System.out.printf("java\tnear_many per key (batches of 1000)\t%.0f%n", batch);
        System.out.printf("java\tnear per call\t%.0f%n", single);
    }
}
