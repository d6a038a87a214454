package simdex

import (
	"encoding/binary"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestCallBenchmark is the Go side of benches/bindings.sh: with SIMDEX_BENCH_INDEX and
// SIMDEX_BENCH_QUERIES set, it times NearMany in batches of 1,000 and Near one call at a time
// (best of three) and prints them as the Rust side does. Skipped otherwise.
func TestCallBenchmark(t *testing.T) {
	dir, qfile := os.Getenv("SIMDEX_BENCH_INDEX"), os.Getenv("SIMDEX_BENCH_QUERIES")
	if dir == "" || qfile == "" {
		t.Skip("SIMDEX_BENCH_INDEX and SIMDEX_BENCH_QUERIES not set")
	}
	ix, err := OpenIndex(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	raw, err := os.ReadFile(qfile)
	if err != nil {
		t.Fatal(err)
	}
	qs := make([]uint64, len(raw)/8)
	for i := range qs {
		qs[i] = binary.LittleEndian.Uint64(raw[i*8:])
	}
	batch, single, rows := 1e18, 1e18, 0
	for round := 0; round < 3; round++ {
		start := time.Now()
		for i := 0; i < len(qs); i += 1000 {
			end := i + 1000
			if end > len(qs) {
				end = len(qs)
			}
			r, err := ix.NearMany(nil, qs[i:end], 3)
			if err != nil {
				t.Fatal(err)
			}
			rows += r.Len()
		}
		if ns := float64(time.Since(start).Nanoseconds()) / float64(len(qs)); ns < batch {
			batch = ns
		}
		start = time.Now()
		for _, q := range qs {
			m, err := ix.Near(q, 3)
			if err != nil {
				t.Fatal(err)
			}
			rows += m.Len()
		}
		if ns := float64(time.Since(start).Nanoseconds()) / float64(len(qs)); ns < single {
			single = ns
		}
	}
	if rows == 0 {
		t.Fatal("the queries matched nothing")
	}
	fmt.Printf("go\tnear_many per key (batches of 1000)\t%.0f\n", batch)
	fmt.Printf("go\tnear per call\t%.0f\n", single)
}
