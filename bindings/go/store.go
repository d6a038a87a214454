package simdex

/*
#include <stdlib.h>
#include <simdex.h>
*/
import "C"

import (
	"context"
	"math"
	"runtime"
	"unsafe"
)

// StoreOptions say how a store is opened, and how a new one is created. The zero value opens
// an existing store for reading and writing, every write durable when its call returns.
type StoreOptions struct {
	// Create the store when path holds none.
	Create bool
	// ReadOnly opens beside a writer in another process; writes fail.
	ReadOnly bool
	// K is a new store's largest query distance (0: 3). An existing store with another k
	// is an error, never ignored.
	K uint32
	// Sync is when writes are durable: "per-write" (default), "group:<ms>" or "manual".
	Sync string
	// MaxDelta: compact when the in-memory delta holds this many writes (0: 2^20).
	MaxDelta uint64
	// ExpectedKeys a new store grows to, for its design (0: 10M).
	ExpectedKeys uint64
	// Documents creates a document store: texts under string ids.
	Documents bool
	// Shingle is a new document store's shingle size in words (0: 2).
	Shingle uint32
	// HTML: a new document store's texts are HTML pages.
	HTML bool
	// Exact keeps every document's shingle set, so that verification at this threshold or
	// above is exact (0: sketches only, whose similarities are estimates).
	Exact float64
	// Sample texts a new document store learns its weights and shingle order from.
	Sample []string
}

// Store is a store open for reading and writing, or read-only. Safe for concurrent use.
type Store struct {
	handle
	c *C.simdex_store
}

// StoreStats are sizes and state of a store.
type StoreStats struct {
	Generation    uint64
	K             uint32
	DocumentStore bool
	Fingerprints  uint64
	Pairs         uint64
	DeltaPairs    uint64
	DeltaDeletes  uint64
	Documents     uint64
	DiskBytes     uint64
}

// options builds the library's options object from o (free it with simdex_store_options_free).
func (o *StoreOptions) options() (*C.simdex_store_options, error) {
	c := C.simdex_store_options_new()
	b := func(v bool) C.int32_t {
		if v {
			return 1
		}
		return 0
	}
	C.simdex_store_options_set_create(c, b(o.Create))
	C.simdex_store_options_set_read_only(c, b(o.ReadOnly))
	C.simdex_store_options_set_documents(c, b(o.Documents))
	if o.K != 0 {
		C.simdex_store_options_set_k(c, C.uint32_t(o.K))
	}
	if o.MaxDelta != 0 {
		C.simdex_store_options_set_max_delta(c, C.uint64_t(o.MaxDelta))
	}
	if o.ExpectedKeys != 0 {
		C.simdex_store_options_set_expected_keys(c, C.uint64_t(o.ExpectedKeys))
	}
	if o.Shingle != 0 {
		C.simdex_store_options_set_shingle(c, C.uint32_t(o.Shingle))
	}
	if o.HTML {
		C.simdex_store_options_set_html(c, 1)
	}
	if o.Exact != 0 {
		C.simdex_store_options_set_exact(c, C.double(o.Exact))
	}
	var msg *C.char
	if o.Sync != "" {
		cs := C.CString(o.Sync)
		err := check(C.simdex_store_options_set_sync(c, cs, &msg), msg)
		C.free(unsafe.Pointer(cs))
		if err != nil {
			C.simdex_store_options_free(c)
			return nil, err
		}
	}
	if len(o.Sample) > 0 {
		arr, mem := strs(o.Sample)
		err := check(C.simdex_store_options_add_sample(c, arr, C.size_t(len(o.Sample)), &msg), msg)
		C.free(mem)
		if err != nil {
			C.simdex_store_options_free(c)
			return nil, err
		}
	}
	return c, nil
}

// OpenStore opens (or, with Create, creates) the store at path; opts nil: the zero options.
func OpenStore(path string, opts *StoreOptions) (*Store, error) {
	if err := checkVersion(); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &StoreOptions{}
	}
	co, err := opts.options()
	if err != nil {
		return nil, err
	}
	defer C.simdex_store_options_free(co)
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var c *C.simdex_store
	var msg *C.char
	if err := check(C.simdex_store_open(cpath, co, &c, &msg), msg); err != nil {
		return nil, err
	}
	s := &Store{c: c}
	runtime.SetFinalizer(s, (*Store).Close)
	return s, nil
}

// Close syncs every write and closes the store after the calls in flight; later calls
// return ErrClosed.
func (s *Store) Close() error {
	if !s.shut() {
		return nil
	}
	runtime.SetFinalizer(s, nil)
	var msg *C.char
	return check(C.simdex_store_close(s.c, &msg), msg)
}

// Insert stores fingerprints[i] for document ids[i].
func (s *Store) Insert(ctx context.Context, fingerprints, ids []uint64) error {
	if len(fingerprints) != len(ids) {
		return &Error{Code: CodeInvalidArgument, Message: "fingerprints and ids differ in length"}
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	token, finish := cancelFor(ctx)
	var msg *C.char
	st := C.simdex_store_insert(s.c, u64s(fingerprints), u64s(ids), C.size_t(len(ids)), token, &msg)
	runtime.KeepAlive(fingerprints)
	runtime.KeepAlive(ids)
	return finish(check(st, msg))
}

// Delete deletes every pair of each document id.
func (s *Store) Delete(ctx context.Context, ids []uint64) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	token, finish := cancelFor(ctx)
	var msg *C.char
	st := C.simdex_store_delete(s.c, u64s(ids), C.size_t(len(ids)), token, &msg)
	runtime.KeepAlive(ids)
	return finish(check(st, msg))
}

// Near returns the (fingerprint, distance, id) rows within k bits of fp (KDefault: the
// store's k), by distance, fingerprint, then id.
func (s *Store) Near(fp uint64, k uint32) (Matches, error) {
	if err := s.enter(); err != nil {
		return Matches{}, err
	}
	defer s.leave()
	return near(true, func(fps *C.uint64_t, ds *C.uint32_t, ids *C.uint64_t, cap C.size_t, n *C.size_t, msg **C.char) C.simdex_status {
		return C.simdex_store_near(s.c, C.uint64_t(fp), C.uint32_t(k), fps, ds, ids, cap, n, msg)
	})
}

// HasNear reports whether some stored fingerprint is within k bits of fp.
func (s *Store) HasNear(fp uint64, k uint32) (bool, error) {
	if err := s.enter(); err != nil {
		return false, err
	}
	defer s.leave()
	var found C.int32_t
	var msg *C.char
	err := check(C.simdex_store_has_near(s.c, C.uint64_t(fp), C.uint32_t(k), &found, &msg), msg)
	return found != 0, err
}

// NearMany answers many queries at once, on all cores.
func (s *Store) NearMany(ctx context.Context, fps []uint64, k uint32) (*Rows, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	token, finish := cancelFor(ctx)
	var rows *C.simdex_rows
	var msg *C.char
	st := C.simdex_store_near_many(s.c, u64s(fps), C.size_t(len(fps)), C.uint32_t(k), token, &rows, &msg)
	runtime.KeepAlive(fps)
	if err := finish(check(st, msg)); err != nil {
		return nil, err
	}
	return takeRows(rows), nil
}

// Flush syncs every write acknowledged so far to stable storage.
func (s *Store) Flush() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	var msg *C.char
	return check(C.simdex_store_flush(s.c, &msg), msg)
}

// Warm builds now what the first document check would build: an exact store's prefix index,
// read from every stored set (seconds per million documents). A service calls it once after
// opening, before it takes requests; answers are the same either way.
func (s *Store) Warm() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	var msg *C.char
	return check(C.simdex_store_warm(s.c, &msg), msg)
}

// Compact folds the in-memory delta into a new generation; false when there was nothing to
// fold.
func (s *Store) Compact(ctx context.Context) (bool, error) {
	if err := s.enter(); err != nil {
		return false, err
	}
	defer s.leave()
	token, finish := cancelFor(ctx)
	var done C.int32_t
	var msg *C.char
	err := finish(check(C.simdex_store_compact(s.c, token, &done, &msg), msg))
	return done != 0, err
}

// Stats returns sizes and state of the store.
func (s *Store) Stats() (StoreStats, error) {
	if err := s.enter(); err != nil {
		return StoreStats{}, err
	}
	defer s.leave()
	var c C.simdex_store_stats
	var msg *C.char
	if err := check(C.simdex_store_get_stats(s.c, &c, &msg), msg); err != nil {
		return StoreStats{}, err
	}
	return StoreStats{
		Generation: uint64(c.generation), K: uint32(c.k), DocumentStore: c.documents_store != 0,
		Fingerprints: uint64(c.fingerprints), Pairs: uint64(c.pairs),
		DeltaPairs: uint64(c.delta_pairs), DeltaDeletes: uint64(c.delta_deletes),
		Documents: uint64(c.documents), DiskBytes: uint64(c.disk_bytes),
	}, nil
}

var nan = math.NaN()
