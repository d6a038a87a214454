package dev.simdex;

import com.sun.jna.Pointer;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A library handle shared by threads: calls hold it shared, close exclusively, so that close
 * waits for the calls in flight and no call reaches a freed handle.
 */
abstract class Handle implements AutoCloseable {
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private Pointer ptr;

    Handle(Pointer ptr) {
        this.ptr = ptr;
    }

    /** Begin a call: the pointer, or an exception after close. Pair with {@link #leave}. */
    Pointer enter() {
        lock.readLock().lock();
        if (ptr == null) {
            lock.readLock().unlock();
            throw new SimdexException(SimdexException.CLOSED, getClass().getSimpleName() + " is closed");
        }
        return ptr;
    }

    void leave() {
        lock.readLock().unlock();
    }

    /** Free the native handle once (the later calls are no-ops). */
    @Override
    public void close() {
        Pointer p;
        lock.writeLock().lock();
        try {
            p = ptr;
            ptr = null;
        } finally {
            lock.writeLock().unlock();
        }
        if (p != null) {
            free(p);
        }
    }

    abstract void free(Pointer p);
}
