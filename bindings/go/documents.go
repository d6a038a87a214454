package simdex

/*
#include <stdlib.h>
#include <simdex.h>
*/
import "C"

import (
	"context"
	"runtime"
	"time"
	"unsafe"
)

// VerdictKind is what ingest or check decided for one document.
type VerdictKind int

const (
	// New: nothing stored before it is a near-duplicate (ingest stored it).
	New VerdictKind = C.SIMDEX_VERDICT_NEW
	// Duplicate: a near-duplicate of the stored document Matched.
	Duplicate VerdictKind = C.SIMDEX_VERDICT_DUPLICATE
	// Empty: a document without words, nobody's duplicate and not stored.
	Empty VerdictKind = C.SIMDEX_VERDICT_EMPTY
	// AlreadyStored: the same document is stored under this id (a retried call).
	AlreadyStored VerdictKind = C.SIMDEX_VERDICT_ALREADY_STORED
)

// Verdict is the answer for one document.
type Verdict struct {
	Kind VerdictKind
	// Matched is a duplicate's match: the stored document's id ("" otherwise).
	Matched string
	// Similarity is a duplicate's word 3-shingle Jaccard similarity with its match: exact in
	// a store created with Exact at or below the threshold, else an estimate (NaN otherwise).
	Similarity float64
	// Distance is a duplicate's Hamming distance to its match (-1 otherwise).
	Distance int
}

// IngestOptions say how documents are checked. The zero value: every candidate within the
// store's k is a duplicate, compared with stored documents and the call's earlier ones.
type IngestOptions struct {
	// Verify is the Jaccard similarity a duplicate must reach (0: no verification).
	Verify float64
	// K is the candidates' largest distance (0: the store's k).
	K uint32
	// StoreOnly compares with stored documents only, not the call's earlier ones.
	StoreOnly bool
}

// Ingest checks each document (ids[i], texts[i]) against everything stored before it and
// stores the new ones; a document under a stored id replaces it.
func (s *Store) Ingest(ctx context.Context, ids, texts []string, opts *IngestOptions) ([]Verdict, error) {
	return s.documents(ctx, ids, texts, opts, true)
}

// Check gives the verdicts Ingest would, storing nothing ("which of these do we have?").
func (s *Store) Check(ctx context.Context, ids, texts []string, opts *IngestOptions) ([]Verdict, error) {
	return s.documents(ctx, ids, texts, opts, false)
}

func (s *Store) documents(ctx context.Context, ids, texts []string, opts *IngestOptions, write bool) ([]Verdict, error) {
	if len(ids) != len(texts) {
		return nil, &Error{Code: CodeInvalidArgument, Message: "ids and texts differ in length"}
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	if opts == nil {
		opts = &IngestOptions{}
	}
	verify, k, flags := C.double(nan), C.uint32_t(KDefault), C.uint32_t(0)
	if opts.Verify != 0 {
		verify = C.double(opts.Verify)
	}
	if opts.K != 0 {
		k = C.uint32_t(opts.K)
	}
	if opts.StoreOnly {
		flags = C.SIMDEX_INGEST_STORE_ONLY
	}
	cids, idMem := strs(ids)
	defer C.free(idMem)
	ctexts, textMem := strs(texts)
	defer C.free(textMem)
	token, finish := cancelFor(ctx)
	var v *C.simdex_verdicts
	var msg *C.char
	n := C.size_t(len(ids))
	var st C.simdex_status
	if write {
		st = C.simdex_store_ingest(s.c, cids, ctexts, n, verify, k, flags, token, &v, &msg)
	} else {
		st = C.simdex_store_check(s.c, cids, ctexts, n, verify, k, flags, token, &v, &msg)
	}
	if err := finish(check(st, msg)); err != nil {
		return nil, err
	}
	defer C.simdex_verdicts_free(v)
	out := make([]Verdict, int(v.len))
	if len(out) == 0 {
		return out, nil
	}
	kinds := unsafe.Slice((*int32)(unsafe.Pointer(v.kinds)), len(out))
	sims := unsafe.Slice((*float64)(unsafe.Pointer(v.similarities)), len(out))
	dists := unsafe.Slice((*int32)(unsafe.Pointer(v.distances)), len(out))
	matched := unsafe.Slice(v.matched, len(out))
	for i := range out {
		out[i] = Verdict{Kind: VerdictKind(kinds[i]), Similarity: sims[i], Distance: int(dists[i])}
		if matched[i].len > 0 {
			out[i].Matched = C.GoStringN(matched[i].ptr, C.int(matched[i].len))
		}
	}
	return out, nil
}

// DeleteDocuments deletes documents by the ids they were ingested under; it returns how many
// were stored.
func (s *Store) DeleteDocuments(ctx context.Context, ids []string) (uint64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	cids, mem := strs(ids)
	defer C.free(mem)
	token, finish := cancelFor(ctx)
	var deleted C.uint64_t
	var msg *C.char
	st := C.simdex_store_delete_documents(s.c, cids, C.size_t(len(ids)), token, &deleted, &msg)
	return uint64(deleted), finish(check(st, msg))
}

// Simhash returns the fingerprint a document store gives text, and whether the text has words
// (without words, the fingerprint is 0 and ingest calls the document empty).
func (s *Store) Simhash(text string) (uint64, bool, error) {
	if err := s.enter(); err != nil {
		return 0, false, err
	}
	defer s.leave()
	ct := C.CString(text)
	defer C.free(unsafe.Pointer(ct))
	var fp C.uint64_t
	var words C.int32_t
	var msg *C.char
	err := check(C.simdex_store_simhash(s.c, ct, C.size_t(len(text)), &fp, &words, &msg), msg)
	runtime.KeepAlive(text)
	return uint64(fp), words != 0, err
}

// ExpireBefore deletes every document stored before t (by the writer's clock; a document
// ingested again was stored then); it returns how many. Only a store created with Exact knows
// when its documents were stored: elsewhere it is an error (delete by id instead). The next
// Compact reclaims their space.
func (s *Store) ExpireBefore(t time.Time) (uint64, error) {
	ms := t.UnixMilli()
	if ms < 0 {
		ms = 0
	}
	return s.expire(C.SIMDEX_EXPIRE_STORED_BEFORE, uint64(ms))
}

// ExpireSeqBelow deletes every document whose sequence number (1, 2, ... in the order they
// were stored) is below seq; it returns how many.
func (s *Store) ExpireSeqBelow(seq uint64) (uint64, error) {
	return s.expire(C.SIMDEX_EXPIRE_SEQ_BELOW, seq)
}

func (s *Store) expire(by C.uint32_t, bound uint64) (uint64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	var n C.uint64_t
	var msg *C.char
	err := check(C.simdex_store_expire(s.c, by, C.uint64_t(bound), &n, &msg), msg)
	return uint64(n), err
}

// DocumentID is the id a document was ingested under, for the store id a query returned
// (Near and NearMany answer with store ids); false when no document is stored under it.
func (s *Store) DocumentID(id uint64) (string, bool, error) {
	if err := s.enter(); err != nil {
		return "", false, err
	}
	defer s.leave()
	buf := make([]byte, 64)
	for {
		var n C.size_t
		var found C.int32_t
		var msg *C.char
		st := C.simdex_store_document_id(s.c, C.uint64_t(id), (*C.char)(unsafe.Pointer(&buf[0])),
			C.size_t(len(buf)), &n, &found, &msg)
		if err := check(st, msg); err != nil {
			return "", false, err
		}
		if int(n) <= len(buf) {
			return string(buf[:n]), found != 0, nil
		}
		buf = make([]byte, n)
	}
}
