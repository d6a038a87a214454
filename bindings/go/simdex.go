// Package simdex embeds simdex, a storage engine for simhash fingerprints, through its C
// library (libsimdex): indexes that answer "which stored fingerprints are within k bits of
// this one?" exactly, stores that add and delete fingerprints durably, and document stores
// that answer "is this text a near-duplicate of one stored?".
//
// The package finds the library and its header with pkg-config (`make -C bindings/c install`
// installs both and simdex.pc). Every handle is safe for concurrent use; Close waits for the
// calls in flight and later calls return ErrClosed. Errors are *Error values carrying the
// engine's code and message; test them with errors.Is(err, simdex.ErrLocked) and the like.
// Long calls take a context.Context and stop soon after it is done, returning its error.
package simdex

/*
#cgo pkg-config: simdex
#include <stdlib.h>
#include <simdex.h>
*/
import "C"

import (
	"context"
	"fmt"
	"sync"
	"unsafe"
)

// Code says what kind of error the engine reported.
type Code int

// The engine's error codes.
const (
	CodeInvalidArgument Code = C.SIMDEX_ERR_INVALID_ARGUMENT
	CodeIO              Code = C.SIMDEX_ERR_IO
	CodeCorrupt         Code = C.SIMDEX_ERR_CORRUPT
	CodeUnsupported     Code = C.SIMDEX_ERR_UNSUPPORTED
	CodeParse           Code = C.SIMDEX_ERR_PARSE
	CodeLocked          Code = C.SIMDEX_ERR_LOCKED
	CodePoisoned        Code = C.SIMDEX_ERR_POISONED
	CodeForked          Code = C.SIMDEX_ERR_FORKED
	CodeCancelled       Code = C.SIMDEX_ERR_CANCELLED
	CodeVersion         Code = C.SIMDEX_ERR_VERSION
	CodeInternal        Code = C.SIMDEX_ERR_INTERNAL
	// CodeClosed: the handle was closed (raised by this package, not the engine).
	CodeClosed Code = 1000
)

// Error is an error the engine reported: its code and its message, which names what failed
// and where (a file, an offset, an argument).
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return "simdex: " + e.Message }

// Is makes errors.Is(err, simdex.ErrLocked) true for every error of that code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Sentinels for errors.Is, one per code.
var (
	ErrInvalidArgument = &Error{Code: CodeInvalidArgument}
	ErrIO              = &Error{Code: CodeIO}
	ErrCorrupt         = &Error{Code: CodeCorrupt}
	ErrUnsupported     = &Error{Code: CodeUnsupported}
	ErrParse           = &Error{Code: CodeParse}
	ErrLocked          = &Error{Code: CodeLocked}
	ErrPoisoned        = &Error{Code: CodePoisoned}
	ErrForked          = &Error{Code: CodeForked}
	ErrCancelled       = &Error{Code: CodeCancelled}
	ErrVersion         = &Error{Code: CodeVersion}
	ErrInternal        = &Error{Code: CodeInternal}
	ErrClosed          = &Error{Code: CodeClosed}
)

// KDefault asks for the largest distance an index or store answers (its design's k).
const KDefault = ^uint32(0)

// Version is the loaded library's version, "major.minor.patch".
func Version() string { return C.GoString(C.simdex_version()) }

var versionOnce sync.Once
var versionErr error

// checkVersion: the library loaded at run time implements the header's ABI (once per process).
func checkVersion() error {
	versionOnce.Do(func() {
		var msg *C.char
		versionErr = check(C.simdex_check_version(C.SIMDEX_ABI_VERSION, &msg), msg)
	})
	return versionErr
}

// check turns a status and its message into an error (nil for SIMDEX_OK), freeing the message.
func check(status C.simdex_status, msg *C.char) error {
	if status == C.SIMDEX_OK {
		return nil
	}
	e := &Error{Code: Code(status), Message: fmt.Sprintf("error %d", int(status))}
	if msg != nil {
		e.Message = C.GoString(msg)
		C.simdex_string_free(msg)
	}
	return e
}

// cancelFor gives a long call a cancel token that is set when ctx is done, and a function to
// call after it: it stops watching and returns ctx's error in place of a cancellation.
func cancelFor(ctx context.Context) (*C.simdex_cancel, func(error) error) {
	if ctx == nil || ctx.Done() == nil {
		return nil, func(err error) error { return err }
	}
	token := C.simdex_cancel_new()
	if ctx.Err() != nil {
		C.simdex_cancel_set(token) // done already: the call stops at once
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
			C.simdex_cancel_set(token)
		case <-stop:
		}
	}()
	return token, func(err error) error {
		close(stop)
		<-done
		C.simdex_cancel_free(token)
		if e, ok := err.(*Error); ok && e.Code == CodeCancelled && ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
}

// u64s is a pointer to a slice's first element for C (nil for an empty slice).
func u64s(v []uint64) *C.uint64_t {
	if len(v) == 0 {
		return nil
	}
	return (*C.uint64_t)(unsafe.Pointer(&v[0]))
}

// strs copies strings into one C allocation: the simdex_str array, then the bytes it points
// to (cgo forbids handing C memory that holds Go pointers). Free the result with C.free.
func strs(v []string) (*C.simdex_str, unsafe.Pointer) {
	if len(v) == 0 {
		return nil, nil
	}
	total := 0
	for _, s := range v {
		total += len(s)
	}
	head := C.size_t(len(v)) * C.size_t(unsafe.Sizeof(C.simdex_str{}))
	mem := C.malloc(head + C.size_t(total) + 1)
	arr := unsafe.Slice((*C.simdex_str)(mem), len(v))
	bytes := unsafe.Slice((*byte)(unsafe.Add(mem, head)), total+1)
	at := 0
	for i, s := range v {
		copy(bytes[at:], s)
		arr[i].ptr = (*C.char)(unsafe.Pointer(&bytes[at]))
		arr[i].len = C.size_t(len(s))
		at += len(s)
	}
	return (*C.simdex_str)(mem), mem
}

// scratch is where a single query's answers land before they are copied out at their size: most
// queries match a few fingerprints, and two allocations of a fixed capacity per call cost more
// than the call into C. The count and the message live beside them, in an object of their own:
// a local whose address goes to C is moved to the heap, an allocation per call each, and the
// buffers' object must hold no pointer, or the runtime's check of every pointer passed to C
// scans all of it (measured: 8% of a call).
type scratch struct {
	buf *buffers
	out *outputs
}

type buffers struct {
	fps [64]uint64
	ds  [64]uint32
	ids [64]uint64
}

type outputs struct {
	n   C.size_t
	msg *C.char
}

var scratchPool = sync.Pool{New: func() any { return &scratch{buf: new(buffers), out: new(outputs)} }}

// nearCall is one single-query call of the library into buffers of capacity cap: it sets *n
// to the full count (ids is not written by an index's call).
type nearCall func(fps *C.uint64_t, ds *C.uint32_t, ids *C.uint64_t, cap C.size_t, n *C.size_t, msg **C.char) C.simdex_status

// near runs call into the pooled scratch buffers, again into buffers of the full count when
// they were too small, and copies the answers out at their size (IDs only withIDs), all columns
// in one allocation.
func near(withIDs bool, call nearCall) (Matches, error) {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	fps, ds, ids := sc.buf.fps[:], sc.buf.ds[:], sc.buf.ids[:]
	out := sc.out
	for {
		out.n, out.msg = 0, nil
		st := call((*C.uint64_t)(unsafe.Pointer(&fps[0])), (*C.uint32_t)(unsafe.Pointer(&ds[0])),
			(*C.uint64_t)(unsafe.Pointer(&ids[0])), C.size_t(len(fps)), &out.n, &out.msg)
		if err := check(st, out.msg); err != nil {
			return Matches{}, err
		}
		n := int(out.n)
		if n <= len(fps) {
			return columns(fps[:n], ds[:n], ids[:n], withIDs), nil
		}
		fps, ds, ids = make([]uint64, n), make([]uint32, n), make([]uint64, n)
	}
}

// columns copies one query's answers into Go memory: one allocation of 64-bit words holding the
// fingerprints, the ids (withIDs) and the distances two to a word, each column a slice of it
// capped at its length (an append to one never writes over the next).
func columns(fps []uint64, ds []uint32, ids []uint64, withIDs bool) Matches {
	n := len(fps)
	if n == 0 {
		return Matches{}
	}
	cols := 1
	if withIDs {
		cols = 2
	}
	words := make([]uint64, cols*n+(n+1)/2)
	m := Matches{Fingerprints: words[0:n:n]}
	copy(m.Fingerprints, fps)
	if withIDs {
		m.IDs = words[n : 2*n : 2*n]
		copy(m.IDs, ids)
	}
	m.Distances = unsafe.Slice((*uint32)(unsafe.Pointer(&words[cols*n])), n)
	copy(m.Distances, ds)
	return m
}

// Rows are the answers to a batch of queries, as columns: the rows of query q are
// Offsets[q]:Offsets[q+1] of Fingerprints, Distances and IDs (IDs nil for an index), by
// distance, then fingerprint, then id.
type Rows struct {
	Offsets      []uint64
	Fingerprints []uint64
	Distances    []uint32
	IDs          []uint64
}

// Len is the number of rows.
func (r *Rows) Len() int { return len(r.Fingerprints) }

// Query returns the rows of query q.
func (r *Rows) Query(q int) Matches {
	a, b := r.Offsets[q], r.Offsets[q+1]
	m := Matches{Fingerprints: r.Fingerprints[a:b], Distances: r.Distances[a:b]}
	if r.IDs != nil {
		m.IDs = r.IDs[a:b]
	}
	return m
}

// Matches are the answers to one query, as columns (IDs nil for an index).
type Matches struct {
	Fingerprints []uint64
	Distances    []uint32
	IDs          []uint64
}

// Len is the number of matches.
func (m Matches) Len() int { return len(m.Fingerprints) }

// takeRows copies the library's rows into Go slices (one copy per column) and frees them.
func takeRows(r *C.simdex_rows) *Rows {
	defer C.simdex_rows_free(r)
	n, q := int(r.len), int(r.queries)
	out := &Rows{
		Offsets:      make([]uint64, q+1),
		Fingerprints: make([]uint64, n),
		Distances:    make([]uint32, n),
	}
	copy(out.Offsets, unsafe.Slice((*uint64)(unsafe.Pointer(r.offsets)), q+1))
	if n > 0 {
		copy(out.Fingerprints, unsafe.Slice((*uint64)(unsafe.Pointer(r.fingerprints)), n))
		copy(out.Distances, unsafe.Slice((*uint32)(unsafe.Pointer(r.distances)), n))
	}
	if r.ids != nil {
		out.IDs = make([]uint64, n)
		if n > 0 {
			copy(out.IDs, unsafe.Slice((*uint64)(unsafe.Pointer(r.ids)), n))
		}
	}
	return out
}
