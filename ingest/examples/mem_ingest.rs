//! Ingests memory logs into a capture with the library alone (no
//! symbolization; the CLI's `trawl ingest --no-symbolize` path), for
//! profiling: `cargo run --release -p trawl-ingest --example mem_ingest OUT LOG...`.
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1).map(PathBuf::from);
    let out = args.next().expect("OUT LOG...");
    let inputs: Vec<PathBuf> = args.collect();
    let t = std::time::Instant::now();
    let s = trawl_ingest::ingest(&inputs, &out, &Default::default(), |_| Ok(())).unwrap();
    println!(
        "{} inputs in {:.3} s",
        s.inputs.len(),
        t.elapsed().as_secs_f64()
    );
}
