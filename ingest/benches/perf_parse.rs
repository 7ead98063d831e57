//! Parser throughput on a generated perf.data (written by the test writer):
//! `read_records` is the record stream alone (framing, ordering, sample
//! decoding); `ingest_to_parquet` is the whole conversion to a capture.
//! Setup (writing the input) is outside the measured loop.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use trawl_ingest::perf::header::{sample, Attr};
use trawl_ingest::perf::reader::PerfReader;
use trawl_ingest::perf::records::context;
use trawl_ingest::perf::writer::{PerfDataWriter, SampleOut};
use trawl_ingest::Diagnostics;

const SAMPLES: u64 = 200_000;

fn input() -> (tempfile::TempDir, std::path::PathBuf) {
    let mut w = PerfDataWriter::new();
    let ev = w.add_event(
        Attr::sampling(
            1,
            0,
            250_000,
            sample::IP
                | sample::TID
                | sample::TIME
                | sample::PERIOD
                | sample::CALLCHAIN
                | sample::CPU,
        ),
        "cpu-clock",
    );
    for p in 0..50 {
        w.comm(1000 + p, 1000 + p, "worker", 1, true);
        w.mmap2(
            1000 + p,
            1000 + p,
            0x400000,
            0x100000,
            0,
            "/usr/bin/worker",
            2,
            None,
        );
    }
    for i in 0..SAMPLES {
        let pid = 1000 + (i % 50) as i32;
        let mut chain = vec![context::USER];
        for d in 0..12 {
            chain.push(0x400000 + ((i * 7 + d * 131) % 4096) * 16);
        }
        w.sample(&SampleOut {
            event: ev,
            ip: chain[1],
            pid,
            tid: pid,
            time: 10 + i * 1000,
            period: 250_000,
            cpu: (i % 2) as u32,
            callchain: chain,
            ..Default::default()
        });
        if i % 5000 == 4999 {
            w.finished_round();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bench.data");
    std::fs::write(&p, w.to_bytes()).unwrap();
    (dir, p)
}

fn bench(c: &mut Criterion) {
    let (dir, path) = input();
    let bytes = std::fs::metadata(&path).unwrap().len();
    let mut g = c.benchmark_group("perf");
    g.throughput(Throughput::Elements(SAMPLES));
    g.sample_size(10);
    g.bench_function("read_records", |b| {
        b.iter(|| {
            let mut d = Diagnostics::new("bench", false);
            let mut r = PerfReader::open_file(&path, &mut d).unwrap();
            let mut n = 0u64;
            while let Some(item) = r.next_record(&mut d).unwrap() {
                n += item.decode().is_ok() as u64;
            }
            assert!(n >= SAMPLES);
        })
    });
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("ingest_to_parquet", |b| {
        b.iter(|| {
            let out = dir.path().join("cap");
            trawl_ingest::ingest(&[path.clone()], &out, &Default::default(), |_| Ok(())).unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
