//! Writes a perf.data with 16-entry branch stacks for `bench/lbr.sh`: N
//! `cpu-clock` samples (100 µs apart, 2 threads) in `p3_C` of
//! `fixtures/perf/bin/lbr`, each with the call/return stack of
//! Ono et al. 2014, Fig. 10 (addresses from `objdump -d` of that binary).
//!
//! Usage: `cargo run --release --example lbr_synth -- OUT.data N BINARY`

use trawl_ingest::perf::header::{sample, Attr};
use trawl_ingest::perf::records::{context, BranchEntry};
use trawl_ingest::perf::writer::{PerfDataWriter, SampleOut};

const BASE: u64 = 0x5555_0000_0000;

fn e(from: u64, to: u64, ty: u64, cycles: u64) -> BranchEntry {
    BranchEntry {
        from: BASE + from,
        to: BASE + to,
        flags: 2 | (cycles << 4) | (ty << 20),
        counters: None,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (out, n, bin) = (&args[1], args[2].parse::<u64>().unwrap(), &args[3]);
    let mut w = PerfDataWriter::new();
    let mut at = Attr::sampling(
        1,
        0,
        100_000,
        sample::IP
            | sample::TID
            | sample::TIME
            | sample::PERIOD
            | sample::CPU
            | sample::CALLCHAIN
            | sample::BRANCH_STACK,
    );
    // USER | ANY_CALL | ANY_RETURN | TYPE_SAVE
    at.branch_sample_type = 1 | 1 << 4 | 1 << 5 | 1 << 16;
    let ev = w.add_event(at, "cpu-clock");
    for pid in [100, 101] {
        w.comm(pid, pid, "lbr", 1, true);
        w.mmap2(pid, pid, BASE, 0x10_0000, 0, bin, 2, None);
    }
    let (call, ret) = (4, 6);
    for i in 0..n {
        let c = (i % 97) * 10;
        let stack = vec![
            e(0x11f9, 0x11cf, call, 30 + c),
            e(0x11ce, 0x11f9, ret, 40),
            e(0x11f4, 0x11ae, call, 5),
            e(0x1204, 0x11f0, call, 5),
            e(0x120f, 0x1200, call, 5),
            e(0x1224, 0x120b, call, 7),
            e(0x1215, 0x1229, ret, 3),
            e(0x120a, 0x1214, ret, 3),
            e(0x11ff, 0x1209, ret, 3),
            e(0x11ef, 0x11fe, ret, 60 + c),
            e(0x11f9, 0x11cf, call, 5),
            e(0x11ce, 0x11f9, ret, 40),
            e(0x11f4, 0x11ae, call, 5),
            e(0x1204, 0x11f0, call, 5),
            e(0x120f, 0x1200, call, 5),
            e(0x1224, 0x120b, call, 7),
        ];
        let ip = BASE + 0x11d3 + (i % 8);
        let pid = 100 + (i % 2) as i32;
        w.sample(&SampleOut {
            event: ev,
            ip,
            pid,
            tid: pid,
            time: 1_000_000 + i * 50_000,
            cpu: (i % 2) as u32,
            period: 100_000,
            callchain: vec![
                context::USER,
                ip,
                BASE + 0x11fe,
                BASE + 0x1209,
                BASE + 0x1214,
                BASE + 0x1229,
                BASE + 0x126a,
            ],
            branch: stack,
            ..Default::default()
        });
        if i % 10_000 == 9_999 {
            w.finished_round();
        }
    }
    w.finished_round();
    std::fs::write(out, w.to_bytes()).unwrap();
}
