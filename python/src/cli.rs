//! `trawl`, the command, from the extension module: the Python package's
//! console script (`trawl/__main__.py`) calls [`cli`], which runs the same
//! program as the Rust binary (`trawl_cli::main`), so that `pip install`
//! builds trawl once and gives both the command and `import trawl`.

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs the `trawl` program with `argv` (the program's name first) and
/// returns its exit status, as the binary's: 0 done, 1 failed, 2 bad
/// arguments, 101 a panic (after Rust's panic message, as the binary
/// prints it). `self_command` runs the program again (`trawl demo`).
/// Runs without the GIL; the caller restores the default action of SIGINT
/// first, so that Ctrl-C ends the command as it ends the binary.
#[pyfunction]
pub(crate) fn cli(py: Python<'_>, argv: Vec<OsString>, self_command: Vec<OsString>) -> u8 {
    py.detach(|| std::panic::catch_unwind(|| trawl_cli::main(argv, self_command)).unwrap_or(101))
}
