//! Running the `simdex` binary in tests.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Run `simdex args` in `cwd`, feeding `stdin`.
pub fn simdex(args: &[&str], stdin: Option<&[u8]>, cwd: &Path) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_simdex"));
    c.args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(b) = stdin {
        // A child may fail (rightly) before reading its input: a broken pipe is not an error.
        if let Err(e) = input.write_all(b) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// Its stdout; fails the test unless it exited 0.
pub fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// Assert a one-line error containing `needle`, no panic.
pub fn fails(o: &Output, needle: &str) {
    assert!(
        !o.status.success(),
        "should fail; stdout: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(needle), "stderr {err:?} lacks {needle:?}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one-line error: {err}");
}

/// `n` lines of `FINGERPRINT_HEX ID` (distinct, scattered fingerprints; ids 0..n).
pub fn pairs(n: u64) -> String {
    (0..n)
        .map(|i| format!("{:016x} {i}\n", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
        .collect()
}

/// Make a FIFO at `p` and write `data` into it from a thread (which blocks until a reader opens
/// it); join the handle to know the reader took everything.
pub fn fifo_with(p: &Path, data: Vec<u8>) -> std::thread::JoinHandle<()> {
    let made = Command::new("mkfifo").arg(p).status().unwrap();
    assert!(made.success(), "mkfifo {}", p.display());
    let p = p.to_path_buf();
    std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.write_all(&data).unwrap();
    })
}
