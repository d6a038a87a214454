package simdex

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func splitmix64(s *uint64) uint64 {
	*s += 0x9E3779B97F4A7C15
	z := *s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func TestVersion(t *testing.T) {
	if err := checkVersion(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(Version(), ".") {
		t.Fatalf("version %q", Version())
	}
}

func TestIndexAgainstBruteForce(t *testing.T) {
	var s uint64 = 3
	fps := make([]uint64, 20000)
	for i := range fps {
		if i%4 == 3 {
			fps[i] = fps[i-1] ^ 1<<(splitmix64(&s)%64)
		} else {
			fps[i] = splitmix64(&s)
		}
	}
	dir := filepath.Join(t.TempDir(), "index")
	if err := BuildIndex(context.Background(), dir, fps, 3); err != nil {
		t.Fatal(err)
	}
	if err := BuildIndex(context.Background(), dir, fps, 3); !errors.Is(err, ErrIO) {
		t.Fatalf("building over an index: %v", err)
	}
	uniq := map[uint64]bool{}
	for _, f := range fps {
		uniq[f] = true
	}
	for _, flags := range []IndexFlags{0, InMemory} {
		ix, err := OpenIndex(dir, flags)
		if err != nil {
			t.Fatal(err)
		}
		st, err := ix.Stats()
		if err != nil || st.Keys != uint64(len(uniq)) || st.K != 3 {
			t.Fatalf("stats %+v, %v", st, err)
		}
		queries := make([]uint64, 300)
		for q := range queries {
			queries[q] = fps[(q*61)%len(fps)] ^ uint64(q%3)<<(q%60)
			m, err := ix.Near(queries[q], 3)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for f := range uniq {
				if bits.OnesCount64(f^queries[q]) <= 3 {
					want++
				}
			}
			if m.Len() != want {
				t.Fatalf("query %d: %d matches, brute force %d", q, m.Len(), want)
			}
			for i, f := range m.Fingerprints {
				if uint32(bits.OnesCount64(f^queries[q])) != m.Distances[i] {
					t.Fatalf("distance of %x", f)
				}
			}
			has, err := ix.HasNear(queries[q], 3)
			if err != nil || has != (want > 0) {
				t.Fatalf("has_near %v %v", has, err)
			}
		}
		rows, err := ix.NearMany(context.Background(), queries, KDefault)
		if err != nil {
			t.Fatal(err)
		}
		for q := range queries {
			m, _ := ix.Near(queries[q], 3)
			got := rows.Query(q)
			if fmt.Sprint(got.Fingerprints, got.Distances) != fmt.Sprint(m.Fingerprints, m.Distances) {
				t.Fatalf("batch and single query %d differ", q)
			}
		}
		if _, err := ix.Near(1, 40); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "40") {
			t.Fatalf("k 40: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := ix.NearMany(ctx, queries, 3); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled batch: %v", err)
		}
		ix.Close()
		if _, err := ix.Near(1, 3); !errors.Is(err, ErrClosed) {
			t.Fatalf("after close: %v", err)
		}
		ix.Close()
	}
	if _, err := OpenIndex(filepath.Join(t.TempDir(), "missing"), 0); !errors.Is(err, ErrIO) {
		t.Fatalf("missing: %v", err)
	}
}

func TestStoreWritesAndReopens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	ctx := context.Background()
	s, err := OpenStore(dir, &StoreOptions{Create: true, K: 3, ExpectedKeys: 100000})
	if err != nil {
		t.Fatal(err)
	}
	var seed uint64 = 9
	fps, ids := make([]uint64, 10000), make([]uint64, 10000)
	for i := range fps {
		fps[i], ids[i] = splitmix64(&seed), uint64(i)
	}
	if err := s.Insert(ctx, fps, ids); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("second writer: %v", err)
	}
	reader, err := OpenStore(dir, &StoreOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := reader.Insert(ctx, fps[:1], ids[:1]); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("write to a reader: %v", err)
	}
	m, err := reader.Near(fps[5]^3, 3)
	if err != nil || m.Len() != 1 || m.IDs[0] != 5 || m.Distances[0] != 2 {
		t.Fatalf("reader near %+v %v", m, err)
	}
	reader.Close()
	if err := s.Delete(ctx, ids[:5000]); err != nil {
		t.Fatal(err)
	}
	if done, err := s.Compact(ctx); err != nil || !done {
		t.Fatalf("compact %v %v", done, err)
	}
	st, _ := s.Stats()
	if st.Pairs != 5000 || st.DeltaPairs != 0 || st.DocumentStore {
		t.Fatalf("stats %+v", st)
	}
	rows, err := s.NearMany(ctx, fps, 0)
	if err != nil || rows.Len() != 5000 {
		t.Fatalf("rows %v %v", rows, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenStore(dir, &StoreOptions{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 10000; i += 97 {
		has, _ := s.HasNear(fps[i], 0)
		if has != (i >= 5000) {
			t.Fatalf("fingerprint %d after reopen: %v", i, has)
		}
	}
	if _, err := OpenStore(dir+"x", &StoreOptions{Sync: "sometimes", Create: true}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad sync: %v", err)
	}
	if err := s.Insert(ctx, fps[:2], ids[:1]); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("lengths: %v", err)
	}
}

// The shared corpus (bindings/c/tests/corpus.md).
func corpusText(i uint64) string {
	if i%997 == 996 {
		return ""
	}
	s := (i/4)*0x100000001B3 + 1
	var words [80]uint64
	for j := range words {
		words[j] = splitmix64(&s) % 5000
	}
	t := i ^ 0xABCDEF
	for e := uint64(0); e < i%4; e++ {
		r := splitmix64(&t)
		words[r%80] = (r >> 20) % 5000
	}
	var b strings.Builder
	for j, w := range words {
		if j > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "w%d", w)
	}
	return b.String()
}

func digest(h uint64, vs []Verdict) uint64 {
	eat := func(bs []byte) {
		for _, c := range bs {
			h = (h ^ uint64(c)) * 0x100000001b3
		}
	}
	for _, v := range vs {
		var le [4]byte
		binary.LittleEndian.PutUint32(le[:], uint32(int32(v.Distance)))
		eat([]byte{byte(v.Kind)})
		eat(le[:])
		eat([]byte(v.Matched))
		eat([]byte{0xFF})
		if (v.Kind == Duplicate) != !math.IsNaN(v.Similarity) {
			panic("similarity of a non-duplicate")
		}
	}
	return h
}

func runDocs(t *testing.T, s *Store, prefix string, from, to uint64, write bool) uint64 {
	h := uint64(0xcbf29ce484222325)
	for start := from; start < to; start += 10000 {
		end := start + 10000
		if end > to {
			end = to
		}
		var ids, texts []string
		for i := start; i < end; i++ {
			ids = append(ids, fmt.Sprintf("%s%d", prefix, i))
			texts = append(texts, corpusText(i))
		}
		opts := &IngestOptions{Verify: 0.85}
		var vs []Verdict
		var err error
		if write {
			vs, err = s.Ingest(context.Background(), ids, texts, opts)
		} else {
			vs, err = s.Check(context.Background(), ids, texts, opts)
		}
		if err != nil {
			t.Fatal(err)
		}
		h = digest(h, vs)
	}
	return h
}

func TestDocumentStoreGivesTheRustAnswers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "docs")
	s, err := OpenStore(dir, &StoreOptions{Create: true, Documents: true, Shingle: 2, Exact: 0.8})
	if err != nil {
		t.Fatal(err)
	}
	if got := runDocs(t, s, "doc-", 0, 100000, true); got != 0x09b5b283896081e6 {
		t.Fatalf("ingest digest %#x", got)
	}
	if got := runDocs(t, s, "new-", 0, 1000, false); got != 0x6b06e1bbf7334ec6 {
		t.Fatalf("check digest %#x", got)
	}
	fp, words, err := s.Simhash(corpusText(0))
	if err != nil || !words {
		t.Fatal(err)
	}
	if has, _ := s.HasNear(fp, 0); !has {
		t.Fatal("a stored document's fingerprint is not found")
	}
	m, err := s.Near(fp, 0)
	if err != nil {
		t.Fatal(err)
	}
	named := false
	for _, id := range m.IDs {
		name, ok, err := s.DocumentID(id)
		if err != nil || !ok {
			t.Fatalf("store id %d: %v", id, err)
		}
		named = named || name == "doc-0"
	}
	if !named {
		t.Fatal("doc-0 is not among its fingerprint's documents")
	}
	if _, ok, err := s.DocumentID(0xdeadbeefcafe); ok || err != nil {
		t.Fatalf("an unknown store id: %v %v", ok, err)
	}
	if _, err := s.Ingest(context.Background(), []string{strings.Repeat("x", 3000)}, []string{"a b c"}, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("long id: %v", err)
	}
	var ids []string
	for i := 0; i < 1000; i++ {
		ids = append(ids, fmt.Sprintf("doc-%d", i))
	}
	n, err := s.DeleteDocuments(context.Background(), ids)
	if err != nil || n != 489 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if _, err := s.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Warm(); err != nil { // the prefix index built up front: the same answers
		t.Fatal(err)
	}
	if got := runDocs(t, s, "new-", 0, 1000, false); got != 0x2119b88688d9bbd6 {
		t.Fatalf("check digest after reopening %#x", got)
	}
	st, _ := s.Stats()
	first, err := s.ExpireSeqBelow(2000)
	if err != nil || first == 0 || first >= 2000 {
		t.Fatalf("expired %d below seq 2000: %v", first, err)
	}
	rest, err := s.ExpireBefore(time.Now().Add(time.Hour))
	if err != nil || first+rest != st.Documents {
		t.Fatalf("expired %d + %d of %d: %v", first, rest, st.Documents, err)
	}
	if _, err := s.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(); st.Documents != 0 {
		t.Fatalf("%d documents after expiring all", st.Documents)
	}
}

func TestConcurrentReadersAndAWriter(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), "s"), &StoreOptions{Create: true, K: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var seed uint64 = 1
	base, ids := make([]uint64, 20000), make([]uint64, 20000)
	for i := range base {
		base[i], ids[i] = splitmix64(&seed), uint64(i)
	}
	if err := s.Insert(context.Background(), base, ids); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 9)
	for r := 0; r < 8; r++ {
		wg.Add(1)
		go func(r uint64) {
			defer wg.Done()
			for n := 0; ; n++ {
				i := splitmix64(&r) % uint64(len(base))
				m, err := s.Near(base[i], 0)
				if err != nil || m.Len() != 1 || m.IDs[0] != i {
					errs <- fmt.Errorf("reader: %v %v", m, err)
					return
				}
				select {
				case <-done:
					if n > 100 {
						return
					}
				default:
				}
			}
		}(uint64(r + 100))
	}
	go func() {
		defer close(done)
		var w uint64 = 77
		for b := 0; b < 20; b++ {
			fps, ids := make([]uint64, 1000), make([]uint64, 1000)
			for j := range fps {
				fps[j], ids[j] = splitmix64(&w), uint64(100000+b*1000+j)
			}
			if err := s.Insert(context.Background(), fps, ids); err != nil {
				errs <- err
				return
			}
			if b%5 == 4 {
				if _, err := s.Compact(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st, _ := s.Stats()
	if st.Pairs+st.DeltaPairs != 40000 {
		t.Fatalf("stats %+v", st)
	}
}
