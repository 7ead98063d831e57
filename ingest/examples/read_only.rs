//! Times the perf.data record stream alone (framing, ordering, decoding)
//! on a file: `cargo run --release -p trawl-ingest --example read_only FILE`.
use trawl_ingest::perf::reader::PerfReader;
use trawl_ingest::perf::records::Record;
use trawl_ingest::Diagnostics;

fn main() {
    let path = std::env::args().nth(1).expect("FILE");
    let t = std::time::Instant::now();
    let mut d = Diagnostics::new(path.clone(), false);
    let mut r = PerfReader::open_file(path.as_ref(), &mut d).unwrap();
    let (mut n, mut samples, mut frames) = (0u64, 0u64, 0u64);
    while let Some(item) = r.next_record(&mut d).unwrap() {
        n += 1;
        if let Ok((Record::Sample(s), _)) = item.decode() {
            samples += 1;
            frames += s.callchain.as_ref().map_or(0, |c| c.len() as u64);
        }
    }
    let e = t.elapsed().as_secs_f64();
    println!("{n} records, {samples} samples, {frames} callchain entries in {e:.2} s ({:.2} M samples/s)", samples as f64 / e / 1e6);
}
