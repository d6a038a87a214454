package simdex

/*
#include <stdlib.h>
#include <simdex.h>
*/
import "C"

import (
	"context"
	"runtime"
	"unsafe"
)

// IndexFlags choose how an index is opened.
type IndexFlags uint32

const (
	// InMemory reads the index whole at open instead of mapping its files.
	InMemory IndexFlags = C.SIMDEX_INDEX_IN_MEMORY
	// Populate maps the index and reads it into the page cache at open.
	Populate IndexFlags = C.SIMDEX_INDEX_POPULATE
)

// Index is an index open read-only. Safe for concurrent use.
type Index struct {
	handle
	c *C.simdex_index
}

// IndexStats are the sizes of an index.
type IndexStats struct {
	Keys        uint64
	K           uint32
	Tables      uint32
	BlockSize   uint32
	DiskBytes   uint64
	MemoryBytes uint64
}

// BuildIndex builds an index at path (which must not exist) from fingerprints in any order
// (repeats kept once), for queries within k bits. A failed or cancelled build leaves nothing.
func BuildIndex(ctx context.Context, path string, fingerprints []uint64, k uint32) error {
	if err := checkVersion(); err != nil {
		return err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	token, finish := cancelFor(ctx)
	var msg *C.char
	st := C.simdex_index_build(cpath, u64s(fingerprints), C.size_t(len(fingerprints)), C.uint32_t(k), token, &msg)
	runtime.KeepAlive(fingerprints)
	return finish(check(st, msg))
}

// OpenIndex opens the index at path; flags is 0 or a combination of InMemory and Populate.
func OpenIndex(path string, flags IndexFlags) (*Index, error) {
	if err := checkVersion(); err != nil {
		return nil, err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var c *C.simdex_index
	var msg *C.char
	if err := check(C.simdex_index_open(cpath, C.uint32_t(flags), &c, &msg), msg); err != nil {
		return nil, err
	}
	ix := &Index{c: c}
	runtime.SetFinalizer(ix, (*Index).Close)
	return ix, nil
}

// Close closes the index after the calls in flight; later calls return ErrClosed.
func (ix *Index) Close() error {
	if ix.shut() {
		runtime.SetFinalizer(ix, nil)
		C.simdex_index_close(ix.c)
	}
	return nil
}

// Near returns every stored fingerprint within k bits of fp (KDefault: the design's k), by
// distance then value.
func (ix *Index) Near(fp uint64, k uint32) (Matches, error) {
	if err := ix.enter(); err != nil {
		return Matches{}, err
	}
	defer ix.leave()
	return near(false, func(fps *C.uint64_t, ds *C.uint32_t, _ *C.uint64_t, cap C.size_t, n *C.size_t, msg **C.char) C.simdex_status {
		return C.simdex_index_near(ix.c, C.uint64_t(fp), C.uint32_t(k), fps, ds, cap, n, msg)
	})
}

// HasNear reports whether some stored fingerprint is within k bits of fp.
func (ix *Index) HasNear(fp uint64, k uint32) (bool, error) {
	if err := ix.enter(); err != nil {
		return false, err
	}
	defer ix.leave()
	var found C.int32_t
	var msg *C.char
	err := check(C.simdex_index_has_near(ix.c, C.uint64_t(fp), C.uint32_t(k), &found, &msg), msg)
	return found != 0, err
}

// NearMany answers many queries at once, on all cores.
func (ix *Index) NearMany(ctx context.Context, fps []uint64, k uint32) (*Rows, error) {
	if err := ix.enter(); err != nil {
		return nil, err
	}
	defer ix.leave()
	token, finish := cancelFor(ctx)
	var rows *C.simdex_rows
	var msg *C.char
	st := C.simdex_index_near_many(ix.c, u64s(fps), C.size_t(len(fps)), C.uint32_t(k), token, &rows, &msg)
	runtime.KeepAlive(fps)
	if err := finish(check(st, msg)); err != nil {
		return nil, err
	}
	return takeRows(rows), nil
}

// Stats returns the sizes of the index.
func (ix *Index) Stats() (IndexStats, error) {
	if err := ix.enter(); err != nil {
		return IndexStats{}, err
	}
	defer ix.leave()
	var s C.simdex_index_stats
	var msg *C.char
	if err := check(C.simdex_index_get_stats(ix.c, &s, &msg), msg); err != nil {
		return IndexStats{}, err
	}
	return IndexStats{
		Keys: uint64(s.keys), K: uint32(s.k), Tables: uint32(s.tables),
		BlockSize: uint32(s.block_size), DiskBytes: uint64(s.disk_bytes),
		MemoryBytes: uint64(s.memory_bytes),
	}, nil
}
