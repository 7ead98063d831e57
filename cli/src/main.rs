//! The `trawl` binary: the program of the `trawl_cli` library (the Python
//! package's `trawl` command runs the same function from its extension).

use std::process::ExitCode;

fn main() -> ExitCode {
    // `trawl demo` runs this executable again.
    let me = std::env::current_exe()
        .map(|p| vec![p.into()])
        .unwrap_or_default();
    ExitCode::from(trawl_cli::main(std::env::args_os(), me))
}
