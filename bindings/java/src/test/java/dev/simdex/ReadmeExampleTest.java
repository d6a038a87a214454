package dev.simdex;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's example, run: a document store that answers "is this page new?" exactly. */
class ReadmeExampleTest {
    @TempDir
    Path dir;

    @Test
    void readmeExample() {
        StringBuilder printed = new StringBuilder();
        // The README's lines, from here:
        try (Store store = Store.open(dir.resolve("pages").toString(),
                new StoreOptions().create(true).documents(true).exact(0.9))) {
            String[] ids = {"a.example/1", "a.example/2", "b.example/"};
            String[] texts = {
                "the quick brown fox jumps over the lazy dog and runs into the woods",
                "The quick brown fox jumps over the lazy dog, and runs into the woods!",
                "an entirely different page about simhash fingerprints and their tables",
            };
            Verdict[] verdicts = store.ingest(ids, texts, 0.9, Store.K_DEFAULT, 0, null);
            for (int i = 0; i < ids.length; i++) {
                printed.append(ids[i] + " " + verdicts[i].kind + " " + verdicts[i].matched + "\n");
            }
        } // to here
        assertEquals("a.example/1 NEW null\na.example/2 DUPLICATE a.example/1\nb.example/ NEW null\n",
                printed.toString());
    }
}
