//! The RAPL energy counters of a capture and which one is read per domain:
//! a domain can be read by several counters (a powercap CSV and perf
//! group reads together), and adding them up would count its energy twice.
//! Energy per function (`energy.rs`) and the power model (`power/`) both
//! read the chosen counters.

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Int32Type, Int64Type, SchemaRef};
use datafusion::scalar::ScalarValue;

use crate::error::{Error, Result};
use crate::session::Session;

/// The energy counters and which is chosen per domain.
const ENERGY_CHAINS: &str = include_str!("../analyses/energy/inputs/energy_chains.sql");

/// One counter's readings: a domain is read by several when a powercap
/// CSV and perf group reads (one counter per group) come together; adding
/// them up would count the energy twice, so one is chosen per domain.
#[derive(Clone, Debug)]
pub struct Chain {
    pub capture: String,
    pub domain: String,
    /// The package whose samples share this counter's energy, when the
    /// domain is read per package (several packages); None: all samples.
    pub package: Option<i32>,
    pub source_id: i32,
    pub zone: String,
    pub intervals: i64,
    /// Other counters of the domain, not read.
    pub ignored: Vec<String>,
}

/// Chooses one counter per (capture, domain) ([`chain_rows`]).
pub async fn chosen_chains(s: &Session, event: &str, zones: &[String]) -> Result<Vec<Chain>> {
    Ok(chain_rows(s, event, zones).await?.0)
}

/// The rows of `energy_chain` (capture, domain, package, source_id, zone,
/// intervals, chosen): every counter, and whether it is the one read for
/// its domain (and package). When the domain's counters (those `zones` admits) name
/// several packages (`intel-rapl:0`, `intel-rapl:1`; turbostat's or perf
/// stat's per-socket rows; power events read on CPUs of several
/// packages), one counter is chosen per package and `package` is set;
/// counters of the whole machine are then left out.
pub async fn chain_rows(
    s: &Session,
    event: &str,
    zones: &[String],
) -> Result<(Vec<Chain>, Vec<RecordBatch>)> {
    let zone_list: Vec<ScalarValue> = zones
        .iter()
        .map(|z| ScalarValue::from(z.as_str()))
        .collect();
    let df = s
        .sql_with(
            ENERGY_CHAINS,
            &[
                ("all_zones", ScalarValue::from(zones.is_empty())),
                (
                    "zones",
                    ScalarValue::List(ScalarValue::new_list_nullable(&zone_list, &DataType::Utf8)),
                ),
                ("at", ScalarValue::from(format!("@{event}"))),
            ],
        )
        .await?;
    let batches = Session::collect(df).await?;
    let mut out: Vec<Chain> = Vec::new();
    let mut others: Vec<(String, String, Option<i32>, String)> = Vec::new();
    for b in &batches {
        let cap = crate::rows::string_values(b.column(0));
        let dom = crate::rows::string_values(b.column(1));
        let pkg = b.column(2).as_primitive::<Int32Type>();
        let src = b.column(3).as_primitive::<Int32Type>();
        let zone = crate::rows::string_values(b.column(4));
        let n = b.column(5).as_primitive::<Int64Type>();
        let chosen = b.column(6).as_boolean();
        for i in 0..b.num_rows() {
            let (c, d, z) = (
                cap[i].clone().unwrap_or_default(),
                dom[i].clone().unwrap_or_default(),
                zone[i].clone().unwrap_or_default(),
            );
            if chosen.value(i) {
                out.push(Chain {
                    capture: c,
                    domain: d,
                    package: (!pkg.is_null(i)).then(|| pkg.value(i)),
                    source_id: src.value(i),
                    zone: z,
                    intervals: n.value(i),
                    ignored: Vec::new(),
                });
            } else {
                others.push((c, d, (!pkg.is_null(i)).then(|| pkg.value(i)), z));
            }
        }
    }
    if out.is_empty() {
        return Err(Error::Usage(format!(
            "no energy counter {}: the capture's zones are {}",
            if zones.is_empty() {
                "with intervals".to_string()
            } else {
                format!("named {}", zones.join(", "))
            },
            others
                .iter()
                .map(|o| o.3.clone())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    for (c, d, p, z) in others {
        if let Some(ch) = out.iter_mut().find(|x| {
            x.capture == c
                && x.domain == d
                && (p.is_none() || x.package.is_none() || x.package == p)
        }) {
            if !ch.ignored.contains(&z) {
                ch.ignored.push(z);
            }
        }
    }
    out.sort_by(|a, b| (&a.capture, &a.domain, a.package).cmp(&(&b.capture, &b.domain, b.package)));
    Ok((out, batches))
}

/// The columns of `energy_chain`.
pub fn energy_chain_schema() -> SchemaRef {
    trawl_capture::schema::ENERGY_CHAIN.capture_schema()
}

/// The package a power model or power samples are made for. With
/// readings of several packages in `domain`, `package` must name one (the
/// model relates one package's counter to the event rates of the samples
/// on its CPUs); with one, `package` (if given) still restricts the
/// samples to its CPUs. Returns the package the samples are restricted to
/// (None: all samples), the `$package` of the queries that read them.
pub async fn package_scope(s: &Session, domain: &str, package: Option<i32>) -> Result<Option<i32>> {
    let pk = crate::session::scalar_with(
        s,
        "SELECT string_agg(DISTINCT CAST(package AS VARCHAR), ', ') FROM energy WHERE CAST(domain AS VARCHAR) = $domain AND package IS NOT NULL",
        &[("domain", ScalarValue::from(domain))],
    )
    .await?
    .unwrap_or_default();
    let several = pk.contains(',');
    let Some(p) = package else {
        if several {
            return Err(Error::Usage(format!(
                "{domain} energy of packages {pk}: the model relates one package's counter to the event rates of the samples on its CPUs; pick one with --package"
            )));
        }
        return Ok(None);
    };
    let cpus = crate::session::count(
        s,
        "SELECT count(*) FROM perf_cpu WHERE socket_id = $package",
        &[("package", ScalarValue::Int32(Some(p)))],
    )
    .await?;
    if cpus == 0 {
        return Err(Error::Usage(format!(
            "package {p}: the capture's CPU topology (perf_cpu, from perf.data's HEADER_CPU_TOPOLOGY) has no CPU of that package"
        )));
    }
    Ok(Some(p))
}

/// The one counter of `domain` a power model or power samples read, with
/// the package it is for ([`package_scope`]).
pub struct DomainCounter {
    pub chain: Chain,
    /// The package whose CPUs' samples and counter rows are read (None:
    /// all): the `$package` of `analyses/energy/inputs/*.sql`.
    pub package: Option<i32>,
}

/// Chooses `domain`'s counter ([`chosen_chains`]) for `package`.
pub async fn domain_counter(
    s: &Session,
    event: &str,
    domain: &str,
    zones: &[String],
    package: Option<i32>,
) -> Result<DomainCounter> {
    let package = package_scope(s, domain, package).await?;
    let chain = chosen_chains(s, event, zones)
        .await?
        .into_iter()
        .find(|c| c.domain == domain && (c.package.is_none() || c.package == package))
        .ok_or_else(|| Error::Usage(format!("no {domain} energy readings in the capture")))?;
    Ok(DomainCounter { chain, package })
}
