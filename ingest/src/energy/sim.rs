//! A RAPL simulator: this machine has no RAPL and no hardware counters, so
//! the files of the experiments of Ono et al. 2015 (sampling-based power
//! measurement) are written from a known power model, and the truth
//! (energy per function, the model's coefficients) is kept to check what
//! trawl recovers.
//!
//! One thread on CPU 0 (per package: tid 100 + k on CPU 2k) runs phases
//! of functions of a real binary; each
//! function runs its events at fixed rates (events/s), so the core's power
//! is `W = intercept + Σ coef_i · rate_i`, times `1 + noise·z` per RAPL
//! update (z normal, one per tick). The RAPL counter updates every `tick`
//! (reads see the last update) in units of 2^-14 J.
//!
//! Written:
//! - `perf`: a perf.data (`-k CLOCK_MONOTONIC`, clock data) with
//!   - `{cpu-clock, EVENT…, power/energy-cores/}:S`: time-based samples
//!     every `sample_ns` reading every counter (Ono et al. 2015, Fig. 1), and
//!   - for each event, `{EVENT, power/energy-cores/}:S` sampled every
//!     `period` events (§3.4: event-based samples with the RAPL value),
//! - `csv`: powercap readings (`scripts/rapl-sample.py` format) of the
//!   core and package zones every `csv_ns`, wrapping at `csv_max_uj`
//!   (package = cores + `uncore_w`).
//!
//! `cargo run --example rapl_sim -- DIR BINARY` writes them with the truth
//! as JSON.

use crate::perf::header::{flag, read_format, sample, Attr};
use crate::perf::records::{context, ReadValues};
use crate::perf::writer::{PerfDataWriter, SampleOut};

/// One counted event of the model.
#[derive(Clone, Debug)]
pub struct SimEvent {
    /// perf's name (`inst_retired.any_p`).
    pub name: String,
    /// PERF_TYPE_RAW config.
    pub config: u64,
    /// Joules per event (the model's coefficient).
    pub coef: f64,
    /// Events per sample of the event-based group (Ono et al. 2015's R_i).
    pub period: u64,
}

/// One function: where it is and its events' rates (events/s, in the
/// order of [`SimConfig::events`]).
#[derive(Clone, Debug)]
pub struct SimFunction {
    pub name: String,
    pub ip: u64,
    pub rates: Vec<f64>,
}

#[derive(Clone, Debug)]
pub struct SimConfig {
    pub seed: u64,
    pub duration_ns: u64,
    /// RAPL update interval.
    pub tick_ns: u64,
    /// `cpu-clock` sampling period.
    pub sample_ns: u64,
    /// Phase lengths: uniform in this range.
    pub phase_ns: (u64, u64),
    /// Relative standard deviation of the power per tick.
    pub noise: f64,
    pub intercept_w: f64,
    pub events: Vec<SimEvent>,
    pub functions: Vec<SimFunction>,
    /// Binary the functions are in (mapped at [`SIM_BASE`]) and its
    /// build id (so perf finds it in its build-id cache).
    pub binary: String,
    pub build_id: Option<Vec<u8>>,
    /// Powercap reading interval and wrap range of the core zone.
    pub csv_ns: u64,
    pub csv_max_uj: u64,
    /// Package power beyond the cores (W, constant).
    pub uncore_w: f64,
    /// Packages (sockets): each runs its own thread (tid 100 + k on CPU
    /// 2k, two CPUs per package in the CPU_TOPOLOGY feature) through its
    /// own shuffle of the phases, with its own RAPL counters (`intel-rapl:k`
    /// in the CSV; reads of power/energy-cores/ on CPU 2k).
    pub sockets: usize,
}

/// Where the binary is mapped.
pub const SIM_BASE: u64 = 0x5555_0000_0000;
/// Wall-clock ns at the clock-data reference and CLOCK_MONOTONIC ns then.
pub const SIM_WALL: u64 = 1_700_000_000_000_000_000;
pub const SIM_MONO: u64 = 1_000_000_000;
/// RAPL energy unit (2^-14 J).
const UNIT_J: f64 = 1.0 / 16384.0;

impl SimConfig {
    /// The default model: four events with Ono et al. 2015's names (§3.2)
    /// and coefficients that make each term worth watts, six functions of
    /// `fixtures/perf/bin/lbr` (addresses given by the caller, in the
    /// order F1, F2, F3, p3_A, p3_B, p3_C) with different event mixes.
    pub fn default_model(binary: &str, ips: &[u64; 6]) -> SimConfig {
        let ev = |name: &str, config, coef: f64| SimEvent {
            name: name.into(),
            config,
            coef,
            // 0.05 J of the event's term per sample.
            period: (0.05 / coef).round() as u64,
        };
        let events = vec![
            ev("cpu_clk_unhalted.thread_p", 0x003c, 1.0e-9),
            ev("inst_retired.any_p", 0x00c0, 0.6e-9),
            ev("resource_stalls.rs", 0x04a2, 4.0e-9),
            ev("l2_trans.all_pf", 0x08f0, 2.5e-8),
        ];
        // Rates (events/s): cycles, instructions, stalls, L2 prefetches.
        let rates: [[f64; 4]; 6] = [
            [2.9e9, 8.0e9, 0.10e9, 0.005e9], // F1: tight arithmetic
            [2.9e9, 2.0e9, 0.90e9, 0.020e9], // F2: stalls
            [2.9e9, 1.5e9, 0.40e9, 0.150e9], // F3: streaming memory
            [1.2e9, 1.0e9, 0.20e9, 0.010e9], // p3_A: mostly idle
            [2.9e9, 5.0e9, 0.30e9, 0.080e9], // p3_B: mixed
            [2.0e9, 3.0e9, 0.60e9, 0.050e9], // p3_C
        ];
        let names = ["F1", "F2", "F3", "p3_A", "p3_B", "p3_C"];
        SimConfig {
            seed: 4,
            duration_ns: 12_000_000_000,
            tick_ns: 1_000_000,
            sample_ns: 1_000_000,
            phase_ns: (150_000_000, 450_000_000),
            noise: 0.01,
            intercept_w: 4.0,
            events,
            functions: names
                .iter()
                .zip(ips)
                .zip(rates)
                .map(|((n, &ip), r)| SimFunction {
                    name: n.to_string(),
                    ip,
                    rates: r.to_vec(),
                })
                .collect(),
            binary: binary.into(),
            build_id: None,
            csv_ns: 2_000_000,
            csv_max_uj: 20_000_000,
            uncore_w: 3.0,
            sockets: 1,
        }
    }

    /// The model's power of function `f` (W, without noise).
    pub fn watts(&self, f: usize) -> f64 {
        self.intercept_w
            + self
                .events
                .iter()
                .zip(&self.functions[f].rates)
                .map(|(e, r)| e.coef * r)
                .sum::<f64>()
    }
}

/// What the simulation did.
#[derive(Clone, Debug, Default)]
pub struct Truth {
    /// Core energy per function (J), in [`SimConfig::functions`] order,
    /// over all packages.
    pub function_j: Vec<f64>,
    pub total_j: f64,
    /// Per package: core energy per function (J).
    pub socket_function_j: Vec<Vec<f64>>,
    /// Per package: cpu-clock samples.
    pub socket_samples: Vec<u64>,
    /// Samples written per group: cpu-clock, then each event's.
    pub samples: Vec<u64>,
    /// Counter wrap-arounds in the CSV's core zone.
    pub csv_wraps: u64,
}

impl Truth {
    pub fn to_json(&self, cfg: &SimConfig) -> String {
        let mut s = String::from("{\n  \"functions\": {");
        for (i, f) in cfg.functions.iter().enumerate() {
            s += &format!(
                "{}\n    \"{}\": {{\"joules\": {:.9}, \"watts_model\": {:.6}}}",
                if i > 0 { "," } else { "" },
                f.name,
                self.function_j[i],
                cfg.watts(i)
            );
        }
        s += &format!(
            "\n  }},\n  \"total_j\": {:.9},\n  \"intercept_w\": {},\n  \"coefficients\": {{",
            self.total_j, cfg.intercept_w
        );
        for (i, e) in cfg.events.iter().enumerate() {
            s += &format!(
                "{}\n    \"{}\": {{\"joules_per_event\": {:e}, \"sample_period\": {}}}",
                if i > 0 { "," } else { "" },
                e.name,
                e.coef,
                e.period
            );
        }
        s += &format!(
            "\n  }},\n  \"samples\": {:?},\n  \"csv_wraps\": {},\n  \"sockets\": [",
            self.samples, self.csv_wraps
        );
        for (k, fj) in self.socket_function_j.iter().enumerate() {
            s += &format!(
                "{}\n    {{\"package\": {k}, \"cpu_clock_samples\": {}, \"function_joules\": {{{}}}}}",
                if k > 0 { "," } else { "" },
                self.socket_samples[k],
                cfg.functions
                    .iter()
                    .zip(fj)
                    .map(|(f, j)| format!("\"{}\": {j:.9}", f.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        s += "\n  ]\n}\n";
        s
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit().max(1e-300), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// The run: phases, then per tick the energy.
struct Run {
    /// (start ns, function) of each phase; the last ends at the duration.
    phases: Vec<(u64, usize)>,
    /// Cumulative core energy (J) at each tick boundary.
    ecum: Vec<f64>,
    /// Noise factor of each tick.
    factor: Vec<f64>,
}

impl Run {
    fn phase_at(&self, t: u64) -> usize {
        self.phases.partition_point(|p| p.0 <= t) - 1
    }
}

/// The RAPL counter (in 2^-14 J units) as read at `t` ns since the start.
fn rapl_units(run: &Run, tick: u64, t: u64) -> u64 {
    let j = ((t / tick) as usize).min(run.ecum.len() - 1);
    (run.ecum[j] / UNIT_J).floor() as u64
}

/// Cumulative count of event `e` at `t` (exact: rates are constant within
/// a phase).
fn count_at(cfg: &SimConfig, run: &Run, e: usize, t: u64, cum: &[Vec<f64>]) -> f64 {
    let p = run.phase_at(t);
    let (t0, f) = run.phases[p];
    cum[p][e] + cfg.functions[f].rates[e] * (t - t0) as f64 * 1e-9
}

/// One package's run: phases, per-tick energy, and event counts at each
/// phase start; adds its energy per function to `fj`.
fn run_socket(cfg: &SimConfig, rng: &mut Rng, fj: &mut [f64]) -> (Run, Vec<Vec<f64>>) {
    let nf = cfg.functions.len();
    // Phases: functions in shuffled rounds so each runs several times.
    let mut phases = Vec::new();
    let mut t = 0;
    let mut order: Vec<usize> = Vec::new();
    while t < cfg.duration_ns {
        if order.is_empty() {
            order = (0..nf).collect();
            for i in (1..nf).rev() {
                order.swap(i, (rng.next() % (i as u64 + 1)) as usize);
            }
        }
        phases.push((t, order.pop().unwrap()));
        let (lo, hi) = cfg.phase_ns;
        t += lo + rng.next() % (hi - lo + 1);
    }
    let ticks = cfg.duration_ns.div_ceil(cfg.tick_ns) as usize;
    let mut run = Run {
        phases,
        ecum: vec![0.0; ticks + 1],
        factor: Vec::with_capacity(ticks),
    };
    for j in 0..ticks {
        let f = 1.0 + cfg.noise * rng.normal();
        run.factor.push(f);
        let (a, z) = (
            j as u64 * cfg.tick_ns,
            ((j + 1) as u64 * cfg.tick_ns).min(cfg.duration_ns),
        );
        let mut e = 0.0;
        let mut p = run.phase_at(a);
        let mut s = a;
        while s < z {
            let end = run.phases.get(p + 1).map_or(u64::MAX, |x| x.0).min(z);
            let fun = run.phases[p].1;
            let de = cfg.watts(fun) * (end - s) as f64 * 1e-9 * f;
            fj[fun] += de;
            e += de;
            s = end;
            p += 1;
        }
        run.ecum[j + 1] = run.ecum[j] + e;
    }
    // Event counts at each phase start.
    let ne = cfg.events.len();
    let mut cum = vec![vec![0.0; ne]; run.phases.len()];
    for p in 1..run.phases.len() {
        let (t0, f) = run.phases[p - 1];
        let dt = (run.phases[p].0 - t0) as f64 * 1e-9;
        for e in 0..ne {
            cum[p][e] = cum[p - 1][e] + cfg.functions[f].rates[e] * dt;
        }
    }
    (run, cum)
}

/// Simulates and writes: (perf.data bytes, powercap CSV, truth).
pub fn simulate(cfg: &SimConfig) -> (Vec<u8>, String, Truth) {
    let mut rng = Rng(cfg.seed);
    let nf = cfg.functions.len();
    let nsock = cfg.sockets.max(1);
    let mut truth = Truth {
        function_j: vec![0.0; nf],
        socket_function_j: vec![vec![0.0; nf]; nsock],
        socket_samples: vec![0; nsock],
        ..Default::default()
    };
    let mut socks = Vec::new();
    for k in 0..nsock {
        let (run, cum) = run_socket(cfg, &mut rng, &mut truth.socket_function_j[k]);
        truth.total_j += run.ecum[run.ecum.len() - 1];
        for (f, j) in truth.socket_function_j[k].iter().enumerate() {
            truth.function_j[f] += j;
        }
        socks.push((run, cum));
    }
    let ne = cfg.events.len();

    // perf.data.
    let mut w = PerfDataWriter::new();
    if nsock > 1 {
        // Two CPUs (cores 0 and 1, die 0) per package.
        w.cpus = (0..nsock as i32)
            .flat_map(|k| [(0, 0, k), (1, 0, k)])
            .collect();
    }
    let st = sample::IP
        | sample::TID
        | sample::TIME
        | sample::CPU
        | sample::PERIOD
        | sample::READ
        | sample::CALLCHAIN;
    let rf = read_format::GROUP | read_format::ID;
    let add = |w: &mut PerfDataWriter, ty: u32, config: u64, period: u64, name: &str| {
        let mut at = Attr::sampling(ty, config, period, st);
        at.read_format = rf;
        at.flags |= flag::USE_CLOCKID;
        at.clockid = 1;
        w.add_event(at, name)
    };
    // Group 0: cpu-clock with every counter and the RAPL counter.
    let mut g0 = vec![add(&mut w, 1, 0, cfg.sample_ns, "cpu-clock")];
    for e in &cfg.events {
        g0.push(add(&mut w, 4, e.config, 0, &e.name));
    }
    const POWER_TYPE: u32 = 20;
    g0.push(add(&mut w, POWER_TYPE, 2, 0, "power/energy-cores/"));
    let mut names = vec!["cpu-clock".to_string()];
    names.extend(cfg.events.iter().map(|e| e.name.clone()));
    names.push("power/energy-cores/".into());
    w.groups
        .push((format!("{{{}}}", names.join(",")), 0, g0.len() as u32));
    // One group per event: the event and the RAPL counter.
    let mut ge = Vec::new();
    for e in &cfg.events {
        let lead = add(&mut w, 4, e.config, e.period, &e.name);
        let pw = add(&mut w, POWER_TYPE, 2, 0, "power/energy-cores/");
        w.groups.push((
            format!("{{{},power/energy-cores/}}", e.name),
            lead as u32,
            2,
        ));
        ge.push((lead, pw));
    }
    // Each package's thread has its own instance of every event (perf
    // opens one per CPU): ids[k][event index].
    let nev = g0.len() + 2 * ge.len();
    let ids: Vec<Vec<u64>> = (0..nsock)
        .map(|k| {
            (0..nev)
                .map(|e| if k == 0 { w.event_id(e) } else { w.add_id(e) })
                .collect()
        })
        .collect();
    w.clock_data = Some((1, SIM_WALL, SIM_MONO));
    let (pid, start) = (100, SIM_MONO);
    w.comm(pid, pid, "sim", start, true);
    for k in 1..nsock {
        w.comm(pid, pid + k as i32, "sim", start, false);
    }
    w.mmap2(
        pid,
        pid,
        SIM_BASE,
        0x10_0000,
        0,
        &cfg.binary,
        start,
        cfg.build_id.as_deref(),
    );
    // Samples of all groups in time order: (t, package, group, seq).
    let mut samples: Vec<(u64, usize, usize, u64)> = Vec::new();
    for (k, (run, cum)) in socks.iter().enumerate() {
        // cpu-clock's hrtimer does not run in step with RAPL's updates: an
        // offset of 0.37 periods and ±3 % jitter.
        let mut n = 1;
        loop {
            let jitter = (rng.next() % (cfg.sample_ns * 6 / 100 + 1)) as i64
                - (cfg.sample_ns * 3 / 100) as i64;
            let t = ((n * cfg.sample_ns + cfg.sample_ns * 37 / 100) as i64 + jitter) as u64;
            if t >= cfg.duration_ns {
                break;
            }
            samples.push((t, k, 0, n));
            n += 1;
        }
        for (e, ev) in cfg.events.iter().enumerate() {
            // Crossings of multiples of the period, phase by phase.
            let mut n = 1u64;
            for p in 0..run.phases.len() {
                let (t0, f) = run.phases[p];
                let t1 = run.phases.get(p + 1).map_or(cfg.duration_ns, |x| x.0);
                let r = cfg.functions[f].rates[e];
                if r <= 0.0 {
                    continue;
                }
                while (n * ev.period) as f64 <= cum[p][e] + r * (t1 - t0) as f64 * 1e-9 {
                    let dt = ((n * ev.period) as f64 - cum[p][e]) / r * 1e9;
                    samples.push((t0 + dt.ceil() as u64, k, e + 1, n));
                    n += 1;
                }
            }
        }
    }
    samples.sort();
    truth.samples = vec![0; ne + 1];
    for &(t, k, g, seq) in &samples {
        if t >= cfg.duration_ns {
            continue;
        }
        let (run, cum) = &socks[k];
        truth.samples[g] += 1;
        if g == 0 {
            truth.socket_samples[k] += 1;
        }
        let power = rapl_units(run, cfg.tick_ns, t) << 18;
        let fun = run.phases[run.phase_at(t)].1;
        let ip = cfg.functions[fun].ip + 4;
        let (event, period, values) = if g == 0 {
            // cpu-clock counts ns since it was enabled.
            let mut v = vec![(t, Some(ids[k][g0[0]]), None)];
            for e in 0..ne {
                v.push((
                    count_at(cfg, run, e, t, cum).round() as u64,
                    Some(ids[k][g0[e + 1]]),
                    None,
                ));
            }
            v.push((power, Some(ids[k][g0[ne + 1]]), None));
            (g0[0], cfg.sample_ns, v)
        } else {
            let (lead, pw) = ge[g - 1];
            let p = cfg.events[g - 1].period;
            (
                lead,
                p,
                vec![
                    (seq * p, Some(ids[k][lead]), None),
                    (power, Some(ids[k][pw]), None),
                ],
            )
        };
        w.sample(&SampleOut {
            event,
            id: Some(ids[k][event]),
            ip,
            pid,
            tid: pid + k as i32,
            time: start + t,
            cpu: 2 * k as u32,
            period,
            read: Some(ReadValues {
                time_enabled: None,
                time_running: None,
                values,
            }),
            callchain: vec![context::USER, ip],
            ..Default::default()
        });
    }
    w.finished_round();

    // Powercap CSV: core and package zones of each package.
    let mut csv = String::from("time,zone,name,energy_uj,max_energy_range_uj\n");
    let pkg_max = 262_143_328_850u64;
    let mut last = vec![0; nsock];
    let mut t = 0;
    while t <= cfg.duration_ns {
        let wall = SIM_WALL + t;
        let ts = format!("{}.{:09}", wall / 1_000_000_000, wall % 1_000_000_000);
        for (k, (run, _)) in socks.iter().enumerate() {
            let units = rapl_units(run, cfg.tick_ns, t);
            let core_uj = (units as f64 * UNIT_J * 1e6).floor() as u64;
            // The package: cores plus uncore power, on the same tick grid.
            let tk = (t / cfg.tick_ns) * cfg.tick_ns;
            let pkg_uj =
                (units as f64 * UNIT_J * 1e6 + cfg.uncore_w * tk as f64 * 1e-3).floor() as u64;
            let core = core_uj % cfg.csv_max_uj;
            if core < last[k] {
                truth.csv_wraps += 1;
            }
            last[k] = core;
            csv += &format!(
                "{ts},intel-rapl:{k},package-{k},{},{pkg_max}\n{ts},intel-rapl:{k}:0,core,{core},{}\n",
                pkg_uj % pkg_max,
                cfg.csv_max_uj
            );
        }
        t += cfg.csv_ns;
    }
    (w.to_bytes(), csv, truth)
}
