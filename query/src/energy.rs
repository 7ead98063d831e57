//! Energy per function (Ono et al. 2015, sampling-based power measurement,
//! §2.2, Fig. 2).
//!
//! Each interval of a RAPL domain's counter (`energy_t`: `delta_uj` over
//! `(t_ns - interval_ns, t_ns]`) is shared among the samples taken in it
//! in proportion to a per-sample indicator, summed per core that is the
//! paper's split of package energy across cores (cores 20 J at 70 : 30
//! → 14 J and 6 J) followed by the split of each core's share among the
//! functions sampled on it. The core indicator (package, cores, gpu, psys)
//! and the DRAM indicator are chosen separately: the sample's period
//! (time on CPU for `cpu-clock`), one per sample, or the increase of a
//! counter read at the samples (`read:EVENT`, e.g. unhalted cycles for
//! cores and LLC misses for DRAM). Energy of an interval with no samples
//! (or all indicators zero) is kept as `[unattributed]`.
//!
//! The sweep is Rust (two sorted streams): [`sample_energy`] gives the
//! rows of the lazy table `sample_energy`; the report is the table
//! function `energy_by(...)` (`analyses/energy/energy_by.sql`), SQL over
//! the rows computed for its arguments.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Float64Builder, Int32Builder, Int64Builder,
    RecordBatch, StringBuilder,
};
use datafusion::arrow::datatypes::{Float64Type, Int32Type, Int64Type, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::logical_expr::Expr;
use datafusion::prelude::{ident, lit, DataFrame};
use datafusion::scalar::ScalarValue;

use crate::functions::{text, texts, Bound, Kind, Param, Spec};

use crate::error::{Error, Result};
use crate::rapl::{chain_rows, chosen_chains, Chain};
use crate::rows::Interner;
use crate::session::Session;

/// Every sample with its CPU, package and indicator weights.
const SAMPLE_WEIGHTS: &str = include_str!("../analyses/energy/inputs/sample_weights.sql");

/// Every counter's intervals with a value and a time.
const ENERGY_INTERVALS: &str = include_str!("../analyses/energy/inputs/energy_intervals.sql");

/// What a sample weighs when an interval's energy is shared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Indicator {
    /// The sample's period.
    Period,
    /// One per sample.
    Samples,
    /// The increase of a counter read at the samples (`perf_sample_read`).
    Read(String),
}

impl Indicator {
    pub fn parse(s: &str) -> Result<Indicator> {
        Ok(match s {
            "period" => Indicator::Period,
            "samples" => Indicator::Samples,
            _ => match s.strip_prefix("read:") {
                Some(e) if !e.is_empty() => Indicator::Read(e.to_string()),
                _ => {
                    return Err(Error::Usage(format!(
                        "indicator {s:?}: expected period, samples or read:EVENT"
                    )))
                }
            },
        })
    }

    /// The text `parse` reads.
    pub fn arg(&self) -> String {
        match self {
            Indicator::Period => "period".into(),
            Indicator::Samples => "samples".into(),
            Indicator::Read(e) => format!("read:{e}"),
        }
    }

    /// What `sample_weights.sql` binds for this indicator: its kind
    /// (`period`, `samples`, `read`) and the counter read (null: none).
    fn params(&self) -> (ScalarValue, ScalarValue) {
        match self {
            Indicator::Period => (ScalarValue::from("period"), ScalarValue::Utf8(None)),
            Indicator::Samples => (ScalarValue::from("samples"), ScalarValue::Utf8(None)),
            Indicator::Read(e) => (ScalarValue::from("read"), ScalarValue::from(e.as_str())),
        }
    }
}

/// Splits every energy interval among its samples: the rows of
/// `sample_energy` (capture, sample_id (null: unattributed), domain,
/// joules, cpu, package: of the sample's CPU, or of an unattributed
/// interval). One counter is read per domain (and package
/// when several are read; [`Chain`]):
/// `zones` picks them, else the one the samples' event read (perf group
/// reads `power/energy-*/@EVENT`), else the one with most readings.
pub async fn sample_energy(
    s: &Session,
    event: Option<&str>,
    core: &Indicator,
    dram: &Indicator,
    zones: &[String],
) -> Result<RecordBatch> {
    let event = check_inputs(s, event, core, dram).await?;
    let (core_kind, core_event) = core.params();
    let (dram_kind, dram_event) = dram.params();
    let params = [
        ("event", ScalarValue::from(event.as_str())),
        ("core", core_kind),
        ("core_event", core_event),
        ("dram", dram_kind),
        ("dram_event", dram_event),
    ];
    let samples = s.sql_with(SAMPLE_WEIGHTS, &params).await?.collect().await?;
    let chains = chosen_chains(s, &event, zones).await?;
    // The intervals of every counter; those of the chosen ones are used.
    let intervals = chosen_intervals(s.sql(ENERGY_INTERVALS).await?.collect().await?, &chains)?;
    overlap_check(&samples, &intervals)?;
    let mut caps = Interner::default();
    // The (capture, package)s whose counters are read separately.
    let split: HashSet<(u32, i32)> = chains
        .iter()
        .filter_map(|c| Some((caps.id(&c.capture), c.package?)))
        .collect();
    let w = Weighed::read(&samples, &mut caps, &split)?;
    w.check_packages(&split, &caps, &event)?;
    let shares = w.share(&intervals, &mut caps)?;
    shares.rows(&w, &caps)
}

/// Refuses what cannot be split: no energy intervals, readings off the
/// samples' time axis, an indicator counter never read. The event (by
/// default the one with most samples).
async fn check_inputs(
    s: &Session,
    event: Option<&str>,
    core: &Indicator,
    dram: &Indicator,
) -> Result<String> {
    let count = |q: &'static str| crate::session::count(s, q, &[]);
    if count("SELECT count(*) FROM energy WHERE delta_uj IS NOT NULL").await? == 0 {
        return Err(Error::Usage(
            "no energy intervals in the capture: ingest RAPL readings with the samples (a powercap CSV from scripts/rapl-sample.py, or perf stat -I -x, -e power/energy-pkg/,...)".into(),
        ));
    }
    let unplaced =
        count("SELECT count(*) FROM energy_t WHERE delta_uj IS NOT NULL AND t_ns IS NULL").await?;
    if unplaced > 0 {
        return Err(Error::Usage(format!(
            "{unplaced} energy readings cannot be placed on the samples' time axis (perf stat -I times are relative to its start; record the readings with scripts/rapl-sample.py, and perf with -k CLOCK_MONOTONIC)"
        )));
    }
    let event = crate::sample::choose_event(s, event).await?;
    crate::time::require_aligned_samples(s, &event).await?;
    for (ind, name) in [(core, "core"), (dram, "DRAM")] {
        if let Indicator::Read(e) = ind {
            let n = crate::session::count(
                s,
                "SELECT count(*) FROM perf_sample_read WHERE event = $e",
                &[("e", ScalarValue::from(e.as_str()))],
            )
            .await?;
            if n == 0 {
                return Err(Error::Usage(format!(
                    "{name} indicator read:{e}: no counter of that event in perf_sample_read"
                )));
            }
        }
    }
    Ok(event)
}

/// A batch's column `name` (the input queries' own names).
fn column<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a ArrayRef> {
    b.column_by_name(name).ok_or_else(|| {
        Error::DataFusion(datafusion::error::DataFusionError::Internal(format!(
            "energy: no column {name}"
        )))
    })
}

/// The samples (by index, in capture and time order) with what they
/// weigh in each split, and which samples each interval may go to.
struct Weighed {
    id: Vec<i64>,
    capture: Vec<u32>,
    cpu: Vec<Option<i32>>,
    package: Vec<Option<i32>>,
    core: Vec<f64>,
    dram: Vec<f64>,
    /// Per capture (package `None`), and per (capture, package) for the
    /// packages whose counters are read separately: the (time, index) of
    /// its samples.
    groups: HashMap<(u32, Option<i32>), Vec<(i64, u32)>>,
}

impl Weighed {
    fn read(
        samples: &[RecordBatch],
        caps: &mut Interner,
        split: &HashSet<(u32, i32)>,
    ) -> Result<Weighed> {
        let n: usize = samples.iter().map(|b| b.num_rows()).sum();
        let mut w = Weighed {
            id: Vec::with_capacity(n),
            capture: Vec::with_capacity(n),
            cpu: Vec::with_capacity(n),
            package: Vec::with_capacity(n),
            core: Vec::with_capacity(n),
            dram: Vec::with_capacity(n),
            groups: HashMap::new(),
        };
        let weight = |a: &Float64Array, i: usize| {
            if a.is_null(i) {
                0.0
            } else {
                a.value(i).max(0.0)
            }
        };
        for b in samples {
            let cap = caps.column(column(b, "cap")?)?;
            let id = column(b, "sid")?.as_primitive::<Int64Type>();
            let t = column(b, "tns")?.as_primitive::<Int64Type>();
            let cpu = column(b, "cpu_id")?.as_primitive::<Int32Type>();
            let wc = column(b, "wc")?.as_primitive::<Float64Type>();
            let wd = column(b, "wd")?.as_primitive::<Float64Type>();
            let pkg = column(b, "pkg")?.as_primitive::<Int32Type>();
            for (i, &c) in cap.iter().enumerate() {
                let k = w.id.len() as u32;
                let p = (!pkg.is_null(i)).then(|| pkg.value(i));
                w.id.push(id.value(i));
                w.capture.push(c);
                w.cpu.push((!cpu.is_null(i)).then(|| cpu.value(i)));
                w.package.push(p);
                w.core.push(weight(wc, i));
                w.dram.push(weight(wd, i));
                let x = (t.value(i), k);
                if let Some(p) = p.filter(|&p| split.contains(&(c, p))) {
                    w.groups.entry((c, Some(p))).or_default().push(x);
                }
                w.groups.entry((c, None)).or_default().push(x);
            }
        }
        Ok(w)
    }

    /// Refuses a package whose counter is read but that has no samples.
    fn check_packages(
        &self,
        split: &HashSet<(u32, i32)>,
        caps: &Interner,
        event: &str,
    ) -> Result<()> {
        for &(c, p) in split {
            if self.groups.contains_key(&(c, Some(p))) {
                continue;
            }
            let any = self
                .groups
                .get(&(c, None))
                .is_some_and(|v| v.iter().any(|x| self.package[x.1 as usize].is_some()));
            let c = caps.name(c);
            return Err(Error::Usage(if any {
                format!("{c}: energy of package {p} but no {event} samples on its CPUs")
            } else {
                format!(
                    "{c}: readings of several packages, but the samples cannot be placed on packages: that needs each sample's CPU (perf record -a, or --sample-cpu) and the CPU topology perf.data records (HEADER_CPU_TOPOLOGY, table perf_cpu); pick one package's counter with --zone"
                )
            }));
        }
        Ok(())
    }

    /// Each interval's joules split among the samples in it (in (t0, t1])
    /// by their weight in its domain; intervals without weight stay
    /// unattributed.
    fn share(&self, intervals: &[RecordBatch], caps: &mut Interner) -> Result<Shares> {
        let n = self.id.len();
        let mut sh = Shares {
            domains: Interner::default(),
            joules: Vec::new(),
            unattributed: BTreeMap::new(),
        };
        let empty = Vec::new();
        for b in intervals {
            let cap = caps.column(column(b, "capture")?)?;
            let dom = sh.domains.column(column(b, "domain")?)?;
            let t0 = column(b, "t0")?.as_primitive::<Int64Type>();
            let t1 = column(b, "t1")?.as_primitive::<Int64Type>();
            let uj = column(b, "uj")?.as_primitive::<Float64Type>();
            let pkg = column(b, "pkg")?.as_primitive::<Int32Type>();
            while sh.joules.len() < sh.domains.len() {
                sh.joules.push(vec![f64::NAN; n]);
            }
            for i in 0..b.num_rows() {
                let (c, d) = (cap[i], dom[i]);
                let p = (!pkg.is_null(i)).then(|| pkg.value(i));
                let smp = self.groups.get(&(c, p)).unwrap_or(&empty);
                let (a, z) = (t0.value(i), t1.value(i));
                let lo = smp.partition_point(|x| x.0 <= a);
                let hi = smp.partition_point(|x| x.0 <= z);
                let w = if sh.domains.name(d) == "dram" {
                    &self.dram
                } else {
                    &self.core
                };
                let total: f64 = smp[lo..hi].iter().map(|x| w[x.1 as usize]).sum();
                let j = uj.value(i) / 1e6;
                if total <= 0.0 {
                    *sh.unattributed.entry((c, d, p)).or_default() += j;
                    continue;
                }
                let acc = &mut sh.joules[d as usize];
                for x in &smp[lo..hi] {
                    let k = x.1 as usize;
                    let add = j * w[k] / total;
                    acc[k] = if acc[k].is_nan() { add } else { acc[k] + add };
                }
            }
        }
        Ok(sh)
    }
}

/// Joules per domain and sample (NaN: no interval of the domain), and the
/// unattributed joules per (capture, domain, package).
struct Shares {
    domains: Interner,
    joules: Vec<Vec<f64>>,
    unattributed: BTreeMap<(u32, u32, Option<i32>), f64>,
}

impl Shares {
    /// The rows of `sample_energy`.
    fn rows(&self, w: &Weighed, caps: &Interner) -> Result<RecordBatch> {
        let rows = self
            .joules
            .iter()
            .map(|v| v.iter().filter(|j| !j.is_nan()).count())
            .sum::<usize>()
            + self.unattributed.len();
        let (mut ocap, mut oid, mut odom, mut oj, mut ocpu, mut opkg) = (
            StringBuilder::with_capacity(rows, rows * 8),
            Int64Builder::with_capacity(rows),
            StringBuilder::with_capacity(rows, rows * 8),
            Float64Builder::with_capacity(rows),
            Int32Builder::with_capacity(rows),
            Int32Builder::with_capacity(rows),
        );
        for (d, v) in self.joules.iter().enumerate() {
            for (k, &j) in v.iter().enumerate() {
                if j.is_nan() {
                    continue;
                }
                ocap.append_value(caps.name(w.capture[k]));
                oid.append_value(w.id[k]);
                odom.append_value(self.domains.name(d as u32));
                oj.append_value(j);
                ocpu.append_option(w.cpu[k]);
                opkg.append_option(w.package[k]);
            }
        }
        for (&(c, d, p), &j) in &self.unattributed {
            ocap.append_value(caps.name(c));
            oid.append_null();
            odom.append_value(self.domains.name(d));
            oj.append_value(j);
            ocpu.append_null();
            opkg.append_option(p);
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(ocap.finish()),
            Arc::new(oid.finish()),
            Arc::new(odom.finish()),
            Arc::new(oj.finish()),
            Arc::new(ocpu.finish()),
            Arc::new(opkg.finish()),
        ];
        Ok(RecordBatch::try_new(sample_energy_schema(), cols)
            .map_err(datafusion::error::DataFusionError::from)?)
    }
}

/// The columns of `sample_energy`.
pub fn sample_energy_schema() -> SchemaRef {
    trawl_capture::schema::SAMPLE_ENERGY.capture_schema()
}

/// The rows of `intervals` (capture, domain, t0, t1, uj, pkg, source_id,
/// zone) read by a chosen counter, with the chain's package as `pkg`.
fn chosen_intervals(intervals: Vec<RecordBatch>, chains: &[Chain]) -> Result<Vec<RecordBatch>> {
    use datafusion::arrow::array::{Int32Array, UInt32Array};
    let mut out = Vec::with_capacity(intervals.len());
    for b in intervals {
        let cap = crate::rows::string_values(column(&b, "capture")?);
        let pkg = column(&b, "pkg")?.as_primitive::<Int32Type>();
        let src = column(&b, "source_id")?.as_primitive::<Int32Type>();
        let zone = crate::rows::string_values(column(&b, "zone")?);
        let mut keep: Vec<u32> = Vec::new();
        let mut chain_pkg: Vec<Option<i32>> = Vec::new();
        for i in 0..b.num_rows() {
            let p = (!pkg.is_null(i)).then(|| pkg.value(i));
            let chain = chains.iter().find(|c| {
                Some(&c.capture) == cap[i].as_ref()
                    && c.source_id == src.value(i)
                    && Some(&c.zone) == zone[i].as_ref()
                    && (c.package.is_none() || c.package == p)
            });
            if let Some(c) = chain {
                keep.push(i as u32);
                chain_pkg.push(c.package);
            }
        }
        let idx = UInt32Array::from(keep);
        let mut cols: Vec<(&str, ArrayRef)> = Vec::new();
        for name in ["capture", "domain", "t0", "t1", "uj"] {
            let c = datafusion::arrow::compute::take(column(&b, name)?, &idx, None)
                .map_err(datafusion::error::DataFusionError::from)?;
            cols.push((name, c));
        }
        cols.push(("pkg", Arc::new(Int32Array::from(chain_pkg))));
        out.push(crate::rows::batch_of(cols)?);
    }
    Ok(out)
}

/// Refuses readings that do not overlap the samples in time (a clock
/// mismatch would leave every joule unattributed, or put it on the wrong
/// samples).
fn overlap_check(samples: &[RecordBatch], intervals: &[RecordBatch]) -> Result<()> {
    let span = |bs: &[RecordBatch], a: &str, b: &str| -> Result<Option<(i64, i64)>> {
        let mut r: Option<(i64, i64)> = None;
        for x in bs {
            let (ca, cb) = (
                column(x, a)?.as_primitive::<Int64Type>(),
                column(x, b)?.as_primitive::<Int64Type>(),
            );
            for i in 0..x.num_rows() {
                let (lo, hi) = (ca.value(i), cb.value(i));
                r = Some(r.map_or((lo, hi), |(p, q)| (p.min(lo), q.max(hi))));
            }
        }
        Ok(r)
    };
    let (Some((s0, s1)), Some((e0, e1))) =
        (span(samples, "tns", "tns")?, span(intervals, "t0", "t1")?)
    else {
        return Ok(());
    };
    if e1 < s0 || e0 > s1 {
        return Err(Error::Usage(format!(
            "the energy readings ({:.3} s to {:.3} s on the capture's axis) do not overlap the samples ({:.3} s to {:.3} s): were they taken on another clock or run? (perf needs -k CLOCK_MONOTONIC and clock data; powercap CSV times are UTC)",
            e0 as f64 / 1e9,
            e1 as f64 / 1e9,
            s0 as f64 / 1e9,
            s1 as f64 / 1e9
        )));
    }
    Ok(())
}

/// What the energy report is grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnergyKey {
    Function,
    Process,
    Line,
    Cpu,
    /// The package (socket) of the sample's CPU.
    Package,
}

impl EnergyKey {
    pub const ALL: [EnergyKey; 5] = [
        EnergyKey::Function,
        EnergyKey::Process,
        EnergyKey::Line,
        EnergyKey::Cpu,
        EnergyKey::Package,
    ];

    /// The name `energy_by` takes (and its column).
    pub fn name(self) -> &'static str {
        match self {
            EnergyKey::Function => "function",
            EnergyKey::Process => "process",
            EnergyKey::Line => "line",
            EnergyKey::Cpu => "cpu",
            EnergyKey::Package => "package",
        }
    }

    pub fn parse(s: &str) -> Option<EnergyKey> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }

    /// What the key is.
    pub fn doc(self) -> &'static str {
        match self {
            EnergyKey::Function => "the sampled (leaf) function",
            EnergyKey::Process => "comm[pid]",
            EnergyKey::Line => "the leaf's source line",
            EnergyKey::Cpu => "the sample's CPU",
            EnergyKey::Package => "the package (socket) of the sample's CPU",
        }
    }
}

/// `energy_by(by, ...)`.
pub static ENERGY_BY: Spec = Spec {
    name: "energy_by",
    doc: "Energy per RAPL domain and function, line, process, CPU or package (Ono et al. 2015): every interval shared among its samples.",
    sql: include_str!("../analyses/energy/energy_by.sql"),
    positional: 1,
    params: &[
        Param {
            name: "by",
            kind: Kind::TextList,
            doc: "keys in order: function (default), line, process, cpu, package",
        },
        Param {
            name: "event",
            kind: Kind::Text,
            doc: "the samples' event (default: the one with most samples)",
        },
        Param {
            name: "core",
            kind: Kind::Text,
            doc: "sample weight for package/core energy: period (default), samples or read:EVENT",
        },
        Param {
            name: "dram",
            kind: Kind::Text,
            doc: "sample weight for DRAM energy: period (default), samples or read:EVENT",
        },
        Param {
            name: "zone",
            kind: Kind::TextList,
            doc: "the counters to read (default: one per domain)",
        },
    ],
    columns: Some(energy_columns),
    inputs: Some(energy_inputs),
};

/// The keys' columns (`k1 AS function`, ...), each key once.
fn energy_columns(
    b: &Bound,
    _: &std::sync::Arc<crate::session::Shared>,
) -> datafusion::error::Result<Vec<Expr>> {
    let mut keys = texts(b, "by")?;
    if keys.is_empty() {
        keys.push("function".into());
    }
    let mut cols = vec![ident("capture"), ident("domain")];
    let mut seen: Vec<&str> = Vec::new();
    for (i, k) in keys.iter().enumerate().take(5) {
        let Some(key) = EnergyKey::parse(k) else {
            return datafusion::common::plan_err!(
                "energy_by: keys are function, line, process, cpu and package, got {k:?}"
            );
        };
        if !seen.contains(&key.name()) {
            seen.push(key.name());
            cols.push(ident(format!("k{}", i + 1)).alias(key.name()));
        }
    }
    cols.extend(["joules", "share_pct", "samples"].map(ident));
    Ok(cols)
}

/// `sample_energy` for the call's event, indicators and counters.
fn energy_inputs(
    b: &Bound,
    shared: &Arc<crate::session::Shared>,
) -> datafusion::error::Result<Vec<(&'static str, Arc<dyn TableProvider>)>> {
    let plan_err = |e: Error| datafusion::error::DataFusionError::Plan(format!("energy_by: {e}"));
    let event = text(b, "event");
    let core =
        Indicator::parse(&text(b, "core").unwrap_or_else(|| "period".into())).map_err(plan_err)?;
    let dram =
        Indicator::parse(&text(b, "dram").unwrap_or_else(|| "period".into())).map_err(plan_err)?;
    let zones = texts(b, "zone")?;
    let table = crate::tables::LazyTable::derived(
        &trawl_capture::schema::SAMPLE_ENERGY,
        shared.clone(),
        move |s| {
            let (event, core, dram, zones) =
                (event.clone(), core.clone(), dram.clone(), zones.clone());
            async move {
                Ok(vec![
                    sample_energy(&s, event.as_deref(), &core, &dram, &zones).await?,
                ])
            }
        },
    );
    Ok(vec![("sample_energy", Arc::new(table))])
}

/// Registers `sample_energy` and `energy_chain` (for the default event,
/// indicators and counters; computed when first read) and `energy_by`.
pub async fn register(s: &Session) -> Result<()> {
    s.register_derived(&trawl_capture::schema::SAMPLE_ENERGY, |s| async move {
        Ok(vec![
            sample_energy(&s, None, &Indicator::Period, &Indicator::Period, &[]).await?,
        ])
    })?;
    s.register_derived(&trawl_capture::schema::ENERGY_CHAIN, |s| async move {
        let event = crate::sample::choose_event(&s, None).await?;
        Ok(chain_rows(&s, &event, &[]).await?.1)
    })?;
    crate::functions::register(s, SPECS).await
}

/// The energy table functions.
pub static SPECS: &[&Spec] = &[&ENERGY_BY];

/// `energy_by(keys, ...)`: joules per domain and keys (`--by
/// package,function`: one column per key), with the share of the domain's
/// energy (`[unattributed]`: intervals without samples; their package is
/// kept).
pub async fn report(
    s: &Session,
    keys: &[EnergyKey],
    event: &str,
    core: &Indicator,
    dram: &Indicator,
    zones: &[String],
) -> Result<DataFrame> {
    let mut args: Vec<Expr> = Vec::new();
    for k in keys {
        args.extend([lit("by"), lit(k.name())]);
    }
    args.extend([lit("event"), lit(event)]);
    args.extend([lit("core"), lit(core.arg())]);
    args.extend([lit("dram"), lit(dram.arg())]);
    for z in zones {
        args.extend([lit("zone"), lit(z.as_str())]);
    }
    crate::functions::call(s, "energy_by", &args).await
}

impl crate::choice::Choice for EnergyKey {
    const ALL: &'static [Self] = &EnergyKey::ALL;
    fn name(self) -> &'static str {
        EnergyKey::name(self)
    }
    fn doc(self) -> &'static str {
        EnergyKey::doc(self)
    }
}

/// The energy reports.
pub static REPORTS: &[&crate::report::Report] = &[&ENERGY_REPORT];

/// `trawl report energy`.
pub static ENERGY_REPORT: crate::report::Report = crate::report::Report {
    name: "energy",
    about: "RAPL energy per function (or process, source line, CPU): each interval's package, cores and DRAM energy split across the samples taken in it by a per-core indicator (Ono et al. 2015, Fig. 2).",
    captures: crate::report::Captures::Many,
    opts: || {
        use crate::report::Opt;
        vec![
            Opt::choice::<EnergyKey>("by", "What the joules are summed by: one or more keys, comma-separated (`package,function` gives each package's functions).").comma().default("function"),
            Opt::text("event", "The perf event whose samples get the energy (default: the one with most samples)."),
            Opt::text("core_indicator", "What a sample weighs in the package, cores, gpu and psys split: `period`, `samples` or `read:EVENT` (a counter read at the samples, e.g. read:cycles).").default("period"),
            Opt::text("dram_indicator", "The same for the DRAM split (e.g. read:LLC-load-misses).").default("period"),
            Opt::text("zone", "The energy counters to read (`intel-rapl:0:0`, `power/energy-cores/@cpu-clock`; repeatable). Default: per domain (and per package, when the readings are of several: each package's energy goes to the samples on its CPUs), the one the event's samples read, else the one with most readings.").many(),
        ]
    },
    selects: crate::report::Selects::Nothing,
    t0: true,
    limit: true,
    run: |s, g| {
        Box::pin(async move {
            let core = Indicator::parse(g.text("core_indicator").unwrap_or("period"))?;
            let dram = Indicator::parse(g.text("dram_indicator").unwrap_or("period"))?;
            let event = crate::sample::choose_event(s, g.text("event")).await?;
            let zones = g.texts("zone");
            let mut log = Vec::new();
            for c in chosen_chains(s, &event, zones).await? {
                log.push(format!(
                    "{}: {}{} from {} ({} intervals){}",
                    c.capture,
                    c.domain,
                    c.package
                        .map(|p| format!(" of package {p}"))
                        .unwrap_or_default(),
                    c.zone,
                    c.intervals,
                    if c.ignored.is_empty() {
                        String::new()
                    } else {
                        format!("; not read: {}", c.ignored.join(", "))
                    }
                ));
            }
            let mut keys = g.choices::<EnergyKey>("by")?;
            if keys.is_empty() {
                keys.push(EnergyKey::Function);
            }
            let mut a = crate::report::Answer::rows(report(s, &keys, &event, &core, &dram, zones).await?);
            a.log = log;
            Ok(a)
        })
    },
};
