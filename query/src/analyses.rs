//! Named analyses. Each is a SQL file under `query/analyses/`; Rust only
//! chooses the inputs (the `selected_sample` view) and fills the few
//! placeholders that name the grouping key.

use datafusion::prelude::DataFrame;

use crate::{Error, Result, Session};

/// View `perf_frame_name`: function and module of every frame.
pub const FRAME_NAME: &str = include_str!("../analyses/perf/frame_name.sql");
const HOTSPOTS: &str = include_str!("../analyses/perf/hotspots.sql");

/// What hotspots are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HotspotKey {
    Function,
    Module,
    Address,
}

/// Which samples an analysis looks at.
#[derive(Clone, Debug, Default)]
pub struct SampleFilter {
    pub event: Option<String>,
    pub pids: Vec<i32>,
    pub tids: Vec<i32>,
    pub comms: Vec<String>,
    /// Inclusive start and exclusive end, ns on the capture clock.
    pub time_from_ns: Option<i64>,
    pub time_to_ns: Option<i64>,
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl SampleFilter {
    fn where_clause(&self, event: &str) -> String {
        let mut w = vec![format!("event = {}", quote(event))];
        let list = |v: &[i32]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.pids.is_empty() {
            w.push(format!("pid IN ({})", list(&self.pids)));
        }
        if !self.tids.is_empty() {
            w.push(format!("tid IN ({})", list(&self.tids)));
        }
        if !self.comms.is_empty() {
            w.push(format!(
                "comm IN ({})",
                self.comms
                    .iter()
                    .map(|c| quote(c))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if let Some(t) = self.time_from_ns {
            w.push(format!("time_ns >= {t}"));
        }
        if let Some(t) = self.time_to_ns {
            w.push(format!("time_ns < {t}"));
        }
        w.join(" AND ")
    }
}

/// Events that have samples, most samples first.
pub async fn sampled_events(s: &Session) -> Result<Vec<(String, i64)>> {
    use datafusion::arrow::array::AsArray;
    let df = s
        .sql("SELECT CAST(event AS VARCHAR) AS event, count(*) AS n FROM perf_sample GROUP BY 1 ORDER BY n DESC, event")
        .await?;
    let mut out = Vec::new();
    for b in df.collect().await? {
        let e = crate::string_values(b.column(0));
        let n = b
            .column(1)
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        for (i, name) in e.into_iter().enumerate() {
            out.push((name.unwrap_or_default(), n.value(i)));
        }
    }
    Ok(out)
}

/// Defines the `selected_sample` view: the samples of one event (the one
/// named, or the one with most samples), narrowed by the filter. Returns the
/// event used.
pub async fn select_samples(s: &Session, f: &SampleFilter) -> Result<String> {
    let events = sampled_events(s).await?;
    let event = match &f.event {
        Some(e) => {
            if !events.iter().any(|(n, _)| n == e) {
                return Err(Error::Usage(format!(
                    "no samples of event {e:?}; events with samples: {}",
                    events
                        .iter()
                        .map(|(n, c)| format!("{n} ({c})"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            e.clone()
        }
        None => match events.first() {
            Some((e, _)) => e.clone(),
            None => return Err(Error::Usage("the capture has no samples".into())),
        },
    };
    s.sql(&format!(
        "CREATE OR REPLACE VIEW selected_sample AS SELECT * FROM perf_sample WHERE {}",
        f.where_clause(&event)
    ))
    .await?;
    Ok(event)
}

/// Exclusive and inclusive cost per function, module or address of the
/// samples in `selected_sample`.
pub async fn hotspots(s: &Session, key: HotspotKey) -> Result<DataFrame> {
    let (k1, k2, name, k2sel) = match key {
        HotspotKey::Function => ("fn.function", "fn.module", "function", "t.key2 AS module,"),
        HotspotKey::Module => ("fn.module", "''", "module", ""),
        HotspotKey::Address => (
            "concat(fn.function, ' @ 0x', to_hex(fn.rel_pc))",
            "fn.module",
            "address",
            "t.key2 AS module,",
        ),
    };
    let q = HOTSPOTS
        .replace("{key1_expr}", k1)
        .replace("{key2_expr}", k2)
        .replace("{key1_name}", name)
        .replace("{key2_select}", k2sel);
    s.sql(&q).await
}
