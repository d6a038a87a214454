package simdex

import "sync"

// handle guards a library handle: calls hold it shared, Close exclusively, so that Close
// waits for the calls in flight and no call reaches a freed handle.
type handle struct {
	mu     sync.RWMutex
	closed bool
}

// enter begins a call: ErrClosed after Close. Pair with leave.
func (h *handle) enter() error {
	h.mu.RLock()
	if h.closed {
		h.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (h *handle) leave() { h.mu.RUnlock() }

// shut marks the handle closed; false if it already was. Call with the result's close.
func (h *handle) shut() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.closed
	h.closed = true
	return !was
}
