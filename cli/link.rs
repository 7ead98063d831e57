// The release build's link options, for the `trawl` command (cli/build.rs)
// and the Python extension module (python/build.rs), both ~100 MB of
// machine code: two linker options take 7 % off without changing the code
// that runs (docs/guide/install.md has the figures).
//
// - `-z pack-relative-relocs`: the relative relocations of a
//   position-independent binary (5 MB of `.rela.dyn`: 24 bytes for every
//   pointer in a vtable or constant table, for the loader to add the load
//   address to) packed as bitmaps (`DT_RELR`), which glibc reads from
//   2.36 on. Only where the building machine's glibc is that recent: the
//   build runs where the command will run (README's `pip install
//   ./python`, `cargo install`).
// - `--icf=all`: identical functions (generic instances that compile to
//   the same code in several crates) kept once; Rust gives no function a
//   distinct address. LLD's option: only where rustc links with its own
//   LLD (its default on x86_64 Linux).
//
// Neither where another linker is configured (`target.<triple>.linker`,
// which Cargo hands build scripts as RUSTC_LINKER, `-C linker` or
// `-fuse-ld` in the flags: maturin's zig, GNU ld, mold, ...), nor with
// TRAWL_PORTABLE=1, for a build to be copied to other machines (a
// package, a wheel for older glibc). Debug builds (the tests') link as
// before.

/// Emits the options for the link of `targets` (`bins`, `cdylib`).
fn link_args(targets: &str) {
    for k in ["RUSTC_LINKER", "TRAWL_PORTABLE"] {
        println!("cargo:rerun-if-env-changed={k}");
    }
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let target = var("TARGET");
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let other_linker =
        !var("RUSTC_LINKER").is_empty() || flags.contains("linker") || flags.contains("fuse-ld");
    if var("PROFILE") != "release"
        || !target.ends_with("-linux-gnu")
        || var("HOST") != target
        || other_linker
        || !var("TRAWL_PORTABLE").is_empty()
    {
        return;
    }
    let glibc = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let version: Vec<u32> = glibc
        .trim()
        .trim_start_matches("glibc ")
        .split('.')
        .filter_map(|n| n.parse().ok())
        .collect();
    if version.as_slice() >= [2, 36].as_slice() {
        println!("cargo:rustc-link-arg-{targets}=-Wl,-z,pack-relative-relocs");
    }
    if target == "x86_64-unknown-linux-gnu" {
        println!("cargo:rustc-link-arg-{targets}=-Wl,--icf=all");
    }
}
