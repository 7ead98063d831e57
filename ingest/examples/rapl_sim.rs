//! Writes the RAPL simulator's files (`trawl_ingest::energy::sim`): a
//! perf.data with time- and event-based samples reading a simulated
//! `power/energy-cores/` counter, a powercap CSV of the same run, and the
//! truth (energy per function, model coefficients) as JSON.
//!
//! Usage: `cargo run --example rapl_sim -- OUT_DIR BINARY [SECONDS [PACKAGES]]`
//! (BINARY: `fixtures/perf/bin/lbr`, whose F1, F2, F3, p3_A, p3_B, p3_C
//! the simulated thread runs; their addresses are read with `nm`). The
//! binary is mapped as `/opt/trawl-fixtures/bin/lbr`, as in the LBR
//! fixtures: ingest with `--debug-dir fixtures/perf/bin`. With PACKAGES
//! > 1 each package runs its own thread on its own CPUs (CPU_TOPOLOGY in
//! the perf.data, `intel-rapl:K` zones in the CSV).

use trawl_ingest::energy::sim::{simulate, SimConfig};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: rapl_sim OUT_DIR BINARY [SECONDS [PACKAGES]]");
        std::process::exit(2);
    }
    let (dir, bin) = (std::path::Path::new(&args[1]), &args[2]);
    let nm = std::process::Command::new("nm")
        .arg(bin)
        .output()
        .expect("nm");
    let text = String::from_utf8_lossy(&nm.stdout);
    let addr = |name: &str| -> u64 {
        let l = text
            .lines()
            .find(|l| l.ends_with(&format!(" T {name}")))
            .unwrap_or_else(|| panic!("{name} not in {bin}"));
        trawl_ingest::energy::sim::SIM_BASE
            + u64::from_str_radix(l.split(' ').next().unwrap(), 16).unwrap()
    };
    let ips = ["F1", "F2", "F3", "p3_A", "p3_B", "p3_C"].map(addr);
    // Mapped where the committed LBR fixtures map it: ingest with
    // `--debug-dir fixtures/perf/bin`.
    let mut cfg = SimConfig::default_model("/opt/trawl-fixtures/bin/lbr", &ips);
    // The build id, as `readelf -n` prints it, so perf finds the binary.
    let notes = std::process::Command::new("readelf")
        .args(["-n", bin])
        .output()
        .expect("readelf");
    cfg.build_id = String::from_utf8_lossy(&notes.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        .map(|h| {
            (0..h.len() / 2)
                .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
                .collect()
        });
    if let Some(s) = args.get(3) {
        cfg.duration_ns = (s.parse::<f64>().expect("SECONDS") * 1e9) as u64;
    }
    if let Some(s) = args.get(4) {
        cfg.sockets = s.parse().expect("PACKAGES");
    }
    let (perf, csv, truth) = simulate(&cfg);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("sim.data"), perf).unwrap();
    std::fs::write(dir.join("sim-rapl.csv"), csv).unwrap();
    std::fs::write(dir.join("sim-truth.json"), truth.to_json(&cfg)).unwrap();
}
