//! The shared library's soname: it is installed as `libsimdex.so` (see the Makefile).
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libsimdex.so");
    }
}
