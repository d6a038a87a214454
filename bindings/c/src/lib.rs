//! The C ABI of simdex: `libsimdex` and its header `include/simdex.h`, generated from this
//! crate's source by `gen_header.py` (CI checks that the two agree).
//!
//! The conventions are those of SQLite's and RocksDB's C APIs:
//!
//! * **Opaque handles** (`simdex_index`, `simdex_store`, `simdex_store_options`,
//!   `simdex_cancel`), each created by one function and freed by one other.
//! * **Every call returns a `simdex_status`**: `SIMDEX_OK` (0) or an error code. Calls that can
//!   fail with a message take `char **err` last: when it is not NULL, an error stores there a
//!   NUL-terminated message that the caller frees with `simdex_string_free`; on success it is
//!   left untouched.
//! * **Caller-owned inputs** are (pointer, length) pairs; the library never keeps them after
//!   the call. A NULL pointer with a non-zero length, a NULL handle or out-pointer, text that
//!   is not UTF-8 or a handle of the wrong kind is `SIMDEX_ERR_INVALID_ARGUMENT`, never
//!   undefined behaviour (a freed or forged handle is the one thing no library can detect).
//! * **Results** go into caller buffers (single queries: a capacity and the full count, so
//!   that one call suffices in the common case) or into library-owned arrays that have their
//!   own free function (`simdex_rows_free`, `simdex_verdicts_free`).
//! * **No panic crosses the boundary**: one becomes `SIMDEX_ERR_INTERNAL` with its message.
//! * **Threads**: a handle of an index or a store may be used from any number of threads at
//!   once, except by its close call, which must be the last call on it. Options objects and
//!   result arrays belong to one thread at a time. A cancel token may be set from any thread.
//! * **Cancellation**: calls that can run long take a `const simdex_cancel *` (NULL: not
//!   cancellable) and stop with `SIMDEX_ERR_CANCELLED` soon after the token is set.

#![deny(missing_docs)]
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)] // the header states each function's contract

mod ffi;
mod index;
mod results;
mod store;
mod store_docs;
mod store_options;

pub use ffi::*;
pub use index::*;
pub use results::*;
pub use store::*;
pub use store_docs::*;
pub use store_options::*;
