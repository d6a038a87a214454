//! SIGINT and SIGTERM during long commands (`build`, `batch`, `insert`, `delete`, `compact`,
//! `merge`, `rebuild`): the first signal asks the work to stop — the library's operations see it
//! through their progress handle ([`crate::progress::handle`]) and return `Cancelled`, dropping
//! their staging and spill directories, so an interrupted build leaves nothing beside its output
//! (SIGKILL cannot be caught: the next build of the same name removes what it left); `insert`
//! and `delete` stop between chunks and say what was applied. A second signal ends the process
//! at once. Commands that install nothing keep the default: a signal ends them.

use std::sync::atomic::{AtomicI32, Ordering};

/// The first signal received (0: none).
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe work here: an atomic swap, and `_exit` on the second signal.
    if SIGNALLED.swap(sig, Ordering::SeqCst) != 0 {
        // SAFETY: `_exit` is async-signal-safe and ends the process without unwinding.
        unsafe { libc::_exit(128 + sig) }
    }
}

/// Handle SIGINT and SIGTERM as described above, from now on.
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only touches an atomic and calls `_exit`; `signal` with a valid
        // signal number and handler cannot fail in a way that matters (the default stays).
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

/// The signal received, if one was.
pub fn signalled() -> Option<i32> {
    match SIGNALLED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The exit status for an interrupted command: 128 + the signal, as a shell reports it.
pub fn exit_code() -> Option<u8> {
    signalled().map(|s| (128 + s).clamp(0, 255) as u8)
}
