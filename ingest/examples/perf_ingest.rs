//! Times (and lets a profiler see) the ingest of one input without
//! symbolization, as `trawl ingest --no-symbolize` runs it, in a binary
//! that builds in minutes:
//! `cargo run --release -p trawl-ingest --example perf_ingest FILE OUT`.
use std::path::PathBuf;

use trawl_ingest::pipeline::{ingest, IngestOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let input = PathBuf::from(args.next().expect("FILE"));
    let out = PathBuf::from(args.next().expect("OUT"));
    let _ = std::fs::remove_dir_all(&out);
    let t = std::time::Instant::now();
    let s = ingest(&[input], &out, &IngestOptions::default(), |_| Ok(())).unwrap();
    let samples: u64 = s.inputs.iter().map(|i| i.samples).sum();
    let e = t.elapsed().as_secs_f64();
    println!("{samples} samples in {e:.2} s");
}
