//! Status codes, versions, error messages and cancel tokens; and the checks every call makes on
//! what crosses the boundary.

use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use simdex::Error;

/// The result of every call: `SIMDEX_OK` or one of the `SIMDEX_ERR_` codes.
pub type simdex_status = i32;

/// Success.
pub const SIMDEX_OK: simdex_status = 0;
/// An argument is invalid: a NULL pointer, text that is not UTF-8, a handle of the wrong kind,
/// or a value out of range (k above the design's, an unknown sync policy, ...).
pub const SIMDEX_ERR_INVALID_ARGUMENT: simdex_status = 1;
/// An operating-system call failed (the message names the file and the operation).
pub const SIMDEX_ERR_IO: simdex_status = 2;
/// Bytes on disk are not a valid simdex structure (a checksum failed, a file is truncated).
pub const SIMDEX_ERR_CORRUPT: simdex_status = 3;
/// A file of a format version or codec this library cannot read.
pub const SIMDEX_ERR_UNSUPPORTED: simdex_status = 4;
/// Input could not be parsed or changed while it was read.
pub const SIMDEX_ERR_PARSE: simdex_status = 5;
/// Another process (or another open handle) holds the store's writer lock.
pub const SIMDEX_ERR_LOCKED: simdex_status = 6;
/// An earlier write or fsync failed: the store refuses writes until it is reopened.
pub const SIMDEX_ERR_POISONED: simdex_status = 7;
/// A process forked from the one that opened the store tried to write through its handle.
pub const SIMDEX_ERR_FORKED: simdex_status = 8;
/// The call's cancel token was set; nothing was published.
pub const SIMDEX_ERR_CANCELLED: simdex_status = 9;
/// The header the caller was compiled with does not match this library.
pub const SIMDEX_ERR_VERSION: simdex_status = 10;
/// A bug in simdex (a panic, caught at the boundary); the message says where. Please report it.
pub const SIMDEX_ERR_INTERNAL: simdex_status = 11;

/// The ABI version of this header: `simdex_check_version(SIMDEX_ABI_VERSION, &err)` fails when
/// the library loaded at run time implements another one.
pub const SIMDEX_ABI_VERSION: u32 = 1;

/// Pass as `k` for the largest distance the index or store answers (its design's k).
pub const SIMDEX_K_DEFAULT: u32 = u32::MAX;

/// The library's version, `"major.minor.patch"` (a static string: never free it).
#[unsafe(no_mangle)]
pub extern "C" fn simdex_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The ABI version the library implements (`SIMDEX_ABI_VERSION` of its own header).
#[unsafe(no_mangle)]
pub extern "C" fn simdex_abi_version() -> u32 {
    SIMDEX_ABI_VERSION
}

/// `SIMDEX_OK` when `header_abi_version` (pass `SIMDEX_ABI_VERSION`) is the library's ABI
/// version, else `SIMDEX_ERR_VERSION` with both versions in `*err`. Call it once at start-up.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_check_version(
    header_abi_version: u32,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || match header_abi_version == SIMDEX_ABI_VERSION {
            true => Ok(()),
            false => Err(Fail::Version(format!(
                "compiled against simdex.h of ABI version {header_abi_version}, but the loaded \
                 libsimdex {} implements ABI version {SIMDEX_ABI_VERSION}",
                env!("CARGO_PKG_VERSION")
            ))),
        })
    }
}

/// Free a message stored in an `err` out-parameter (NULL is ignored).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_string_free(s: *mut c_char) {
    if !s.is_null() {
        drop(unsafe { CString::from_raw(s) });
    }
}

/// A string handed to the library: `len` bytes of UTF-8 at `ptr`, not NUL-terminated (`ptr`
/// may be NULL when `len` is 0). Also how the library returns ids it owns.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct simdex_str {
    /// The bytes.
    pub ptr: *const c_char,
    /// Their number.
    pub len: usize,
}

/// A cancel token: set it from any thread to stop the calls that were given it.
pub struct simdex_cancel {
    magic: u64,
    flag: Arc<AtomicBool>,
}

/// A new token, not set. Free it with `simdex_cancel_free` once no call uses it.
#[unsafe(no_mangle)]
pub extern "C" fn simdex_cancel_new() -> *mut simdex_cancel {
    Box::into_raw(Box::new(simdex_cancel {
        magic: CANCEL_MAGIC,
        flag: Arc::default(),
    }))
}

/// Set the token: calls running with it stop soon with `SIMDEX_ERR_CANCELLED`, and later calls
/// given it stop at once until `simdex_cancel_reset`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_cancel_set(token: *const simdex_cancel) -> simdex_status {
    unsafe { set_flag(token, true) }
}

/// Clear the token, so that it can be given to new calls.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_cancel_reset(token: *const simdex_cancel) -> simdex_status {
    unsafe { set_flag(token, false) }
}

/// Free a token (NULL is ignored). No call may be using it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_cancel_free(token: *mut simdex_cancel) {
    if !token.is_null() && unsafe { (*token).magic } == CANCEL_MAGIC {
        let mut b = unsafe { Box::from_raw(token) };
        b.magic = 0;
    }
}

// Each handle kind starts with its own tag, so that a handle passed where another kind is
// expected (or one already freed, while its memory is not reused) is an argument error.
pub(crate) const CANCEL_MAGIC: u64 = 0x5349_4d44_4341_4e43;
pub(crate) const INDEX_MAGIC: u64 = 0x5349_4d44_494e_4458;
pub(crate) const STORE_MAGIC: u64 = 0x5349_4d44_5354_4f52;
pub(crate) const OPTIONS_MAGIC: u64 = 0x5349_4d44_4f50_5453;

/// Why a call failed: the engine's error, or one of the boundary's own.
pub(crate) enum Fail {
    Engine(Error),
    Invalid(String),
    Version(String),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Engine(e)
    }
}

pub(crate) type Result<T> = std::result::Result<T, Fail>;

pub(crate) fn invalid<T>(msg: impl Into<String>) -> Result<T> {
    Err(Fail::Invalid(msg.into()))
}

fn status_of(e: &Error) -> simdex_status {
    match e {
        Error::Io { .. } => SIMDEX_ERR_IO,
        Error::Corrupt { .. } => SIMDEX_ERR_CORRUPT,
        Error::Unsupported { .. } => SIMDEX_ERR_UNSUPPORTED,
        Error::Unsorted { .. } | Error::InputChanged { .. } | Error::Parse { .. } => {
            SIMDEX_ERR_PARSE
        }
        Error::InvalidArgument(_) => SIMDEX_ERR_INVALID_ARGUMENT,
        Error::Locked { .. } => SIMDEX_ERR_LOCKED,
        Error::Poisoned(_) => SIMDEX_ERR_POISONED,
        Error::Forked { .. } => SIMDEX_ERR_FORKED,
        Error::Cancelled => SIMDEX_ERR_CANCELLED,
        _ => SIMDEX_ERR_INTERNAL,
    }
}

/// Run `f`: its error, or a panic, becomes a status and (when `err` is not NULL) a message.
pub(crate) unsafe fn guard(err: *mut *mut c_char, f: impl FnOnce() -> Result<()>) -> simdex_status {
    let (status, msg) = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return SIMDEX_OK,
        Ok(Err(Fail::Engine(e))) => (status_of(&e), e.to_string()),
        Ok(Err(Fail::Invalid(m))) => (SIMDEX_ERR_INVALID_ARGUMENT, m),
        Ok(Err(Fail::Version(m))) => (SIMDEX_ERR_VERSION, m),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            (
                SIMDEX_ERR_INTERNAL,
                format!("internal error (please report): {what}"),
            )
        }
    };
    if !err.is_null() {
        let c = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
        unsafe { *err = c.into_raw() };
    }
    status
}

/// `len` elements at `ptr` (NULL is fine when `len` is 0).
pub(crate) unsafe fn slice<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return invalid(format!("{what} is NULL with a length of {len}"));
    }
    if !ptr.is_aligned() {
        return invalid(format!("{what} is not aligned for its element type"));
    }
    if len
        .checked_mul(size_of::<T>())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return invalid(format!("{what}: a length of {len} is beyond any buffer"));
    }
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// A caller's buffer of `len` elements to write to.
pub(crate) unsafe fn slice_mut<'a, T>(ptr: *mut T, len: usize, what: &str) -> Result<&'a mut [T]> {
    unsafe { slice(ptr, len, what) }?;
    Ok(match len {
        0 => &mut [],
        _ => unsafe { std::slice::from_raw_parts_mut(ptr, len) },
    })
}

/// An out-parameter that must not be NULL.
pub(crate) unsafe fn out<'a, T>(ptr: *mut T, what: &str) -> Result<&'a mut T> {
    match ptr.is_null() {
        true => invalid(format!("{what} is NULL")),
        false => Ok(unsafe { &mut *ptr }),
    }
}

/// The text of a `simdex_str`, or an error naming it (`what`) and its first bad byte.
pub(crate) unsafe fn text<'a>(s: &simdex_str, what: &dyn Fn() -> String) -> Result<&'a str> {
    let bytes = unsafe { slice(s.ptr.cast::<u8>(), s.len, &what()) }?;
    std::str::from_utf8(bytes).or_else(|e| {
        invalid(format!(
            "{} is not UTF-8 (at byte {})",
            what(),
            e.valid_up_to()
        ))
    })
}

/// A NUL-terminated path.
pub(crate) unsafe fn path(p: *const c_char, what: &str) -> Result<PathBuf> {
    if p.is_null() {
        return invalid(format!("{what} is NULL"));
    }
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    if bytes.is_empty() {
        return invalid(format!("{what} is empty"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
    }
    #[cfg(not(unix))]
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(PathBuf::from(s)),
        Err(_) => invalid(format!("{what} is not UTF-8")),
    }
}

/// The handle at `ptr` when it is one of kind `magic` (`what` names it in errors).
pub(crate) unsafe fn handle<'a, T: Tagged>(ptr: *const T, what: &str) -> Result<&'a T> {
    if ptr.is_null() {
        return invalid(format!("{what} is NULL"));
    }
    if !ptr.is_aligned() {
        return invalid(format!("{what} is not a {}", T::KIND));
    }
    let h = unsafe { &*ptr };
    match h.magic() == T::MAGIC {
        true => Ok(h),
        false => invalid(format!("{what} is not a {} (or was freed)", T::KIND)),
    }
}

/// A handle type: its tag and its name in messages.
pub(crate) trait Tagged {
    const MAGIC: u64;
    const KIND: &'static str;
    fn magic(&self) -> u64;
}

impl Tagged for simdex_cancel {
    const MAGIC: u64 = CANCEL_MAGIC;
    const KIND: &'static str = "simdex_cancel";
    fn magic(&self) -> u64 {
        self.magic
    }
}

unsafe fn cancel_flag<'a>(token: *const simdex_cancel) -> Result<&'a Arc<AtomicBool>> {
    Ok(&unsafe { handle(token, "the cancel token") }?.flag)
}

unsafe fn set_flag(token: *const simdex_cancel, value: bool) -> simdex_status {
    unsafe {
        guard(std::ptr::null_mut(), || {
            cancel_flag(token)?.store(value, Ordering::SeqCst);
            Ok(())
        })
    }
}

/// The flag of an optional token (NULL: a flag nobody sets).
pub(crate) unsafe fn cancel_of(token: *const simdex_cancel) -> Result<Arc<AtomicBool>> {
    match token.is_null() {
        true => Ok(Arc::default()),
        false => Ok(Arc::clone(unsafe { cancel_flag(token) }?)),
    }
}

/// A progress receiver that only asks to stop when `flag` is set.
pub(crate) struct Watch(pub(crate) Arc<AtomicBool>);

impl simdex::Progress for Watch {
    fn cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl Watch {
    /// The engine's error when the flag is set: checked between chunks of a long call.
    pub(crate) fn check(&self) -> Result<()> {
        match self.0.load(Ordering::Relaxed) {
            true => Err(Fail::Engine(Error::Cancelled)),
            false => Ok(()),
        }
    }

    pub(crate) fn progress(&self) -> simdex::ProgressHandle {
        simdex::ProgressHandle::new(Watch(Arc::clone(&self.0)))
    }
}
