package simdex_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"simdex.dev/simdex"
)

// The README's example: a document store that answers "is this page new?" exactly.
func Example() {
	dir, _ := os.MkdirTemp("", "simdex")
	defer os.RemoveAll(dir)
	store, err := simdex.OpenStore(filepath.Join(dir, "pages"), &simdex.StoreOptions{
		Create: true, Documents: true, Exact: 0.9, // exact answers at Jaccard >= 0.9
	})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	ids := []string{"a.example/1", "a.example/2", "b.example/"}
	texts := []string{
		"the quick brown fox jumps over the lazy dog and runs into the woods",
		"The quick brown fox jumps over the lazy dog, and runs into the woods!",
		"an entirely different page about simhash fingerprints and their tables",
	}
	verdicts, err := store.Ingest(context.Background(), ids, texts, &simdex.IngestOptions{Verify: 0.9})
	if err != nil {
		log.Fatal(err)
	}
	for i, v := range verdicts {
		fmt.Printf("%s duplicate=%v of %q\n", ids[i], v.Kind == simdex.Duplicate, v.Matched)
	}
	// Output:
	// a.example/1 duplicate=false of ""
	// a.example/2 duplicate=true of "a.example/1"
	// b.example/ duplicate=false of ""
}
