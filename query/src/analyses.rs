//! Named analyses. Each is a SQL file under `query/analyses/`; Rust only
//! chooses the inputs (the `selected_sample` view) and fills the few
//! placeholders that name the grouping key.

use datafusion::prelude::DataFrame;

use crate::{Error, Result, Session};

/// Views `frame_line`, `frame_name`, `stack_entry` and
/// `stack_entry_inline`: what frames are called, stacks as positions.
pub const FRAME_NAME: &str = include_str!("../analyses/perf/frame_name.sql");
const HOTSPOTS: &str = include_str!("../analyses/perf/hotspots.sql");
const CALLERS: &str = include_str!("../analyses/perf/callers.sql");
const CALLEES: &str = include_str!("../analyses/perf/callees.sql");
const FOLDED: &str = include_str!("../analyses/perf/folded.sql");

/// What hotspots are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HotspotKey {
    /// Function and module.
    Function,
    /// Module (load object).
    Module,
    /// Function, module and address.
    Address,
    /// perf's srcline (`file:line` of the file's base name) and module.
    Srcline,
    /// Function, full source path and line.
    Line,
}

/// What a sample weighs in the metrics.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Weight {
    /// The sample period (perf's default: time for cpu-clock, events for
    /// counters).
    #[default]
    Period,
    /// Every sample weighs 1.
    Samples,
    /// A numeric column of `perf_sample` (e.g. `weight`).
    Column(String),
    /// The increase of a group-read counter (`perf_sample_read`) since the
    /// previous sample of the same counter, e.g. `read:instructions`.
    Read(String),
}

impl Weight {
    /// Parses `period`, `samples`, `read:EVENT` or a `perf_sample` column.
    pub fn parse(s: &str) -> Result<Weight> {
        Ok(match s {
            "period" => Weight::Period,
            "samples" | "count" => Weight::Samples,
            _ => match s.strip_prefix("read:") {
                Some(e) if !e.is_empty() => Weight::Read(e.to_string()),
                _ => {
                    use trawl_ingest::schema::{ColType, PERF_SAMPLE};
                    let numeric = PERF_SAMPLE.columns.iter().any(|c| {
                        c.name == s
                            && matches!(
                                c.ty,
                                ColType::Int32
                                    | ColType::Int64
                                    | ColType::UInt32
                                    | ColType::UInt64
                                    | ColType::Float64
                            )
                    });
                    if !numeric {
                        return Err(Error::Usage(format!(
                            "weight {s:?}: not `period`, `samples`, `read:EVENT` or a numeric perf_sample column"
                        )));
                    }
                    Weight::Column(s.to_string())
                }
            },
        })
    }

    /// Column-name suffix for the weighted metrics (`self_period`, ...);
    /// None for plain sample counts.
    pub fn name(&self) -> Option<String> {
        match self {
            Weight::Period => Some("period".into()),
            Weight::Samples => None,
            Weight::Column(c) => Some(c.clone()),
            Weight::Read(e) => Some(
                e.chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect(),
            ),
        }
    }
}

/// Options shared by the stack analyses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackOpts {
    /// Inline levels count as functions of their own (perf report --inline).
    pub inline: bool,
}

impl Default for StackOpts {
    fn default() -> Self {
        StackOpts { inline: true }
    }
}

impl StackOpts {
    fn entry_view(self) -> &'static str {
        if self.inline {
            "stack_entry_inline"
        } else {
            "stack_entry"
        }
    }
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

/// The event named (which must have samples), or the one with most
/// samples.
pub async fn choose_event(s: &Session, given: Option<&str>) -> Result<String> {
    let events = sampled_events(s).await?;
    Ok(match given {
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
            e.to_string()
        }
        None => match events.first() {
            Some((e, _)) => e.clone(),
            None => return Err(Error::Usage("the capture has no samples".into())),
        },
    })
}

/// `LEFT JOIN (...) ALIAS` giving `ALIAS.delta`: the increase of the
/// counter `event` read at each sample of `perf_sample p` since the
/// previous read of the same thread and group member, in sample order
/// (what perf script prints as the period).
pub(crate) fn read_delta_join(event: &str, alias: &str) -> String {
    format!(
        "LEFT JOIN (SELECT r.capture, r.sample_id, \
           CAST(r.value AS DECIMAL(20,0)) - CAST(COALESCE(lag(r.value) OVER (\
             PARTITION BY r.capture, s.tid, r.idx ORDER BY r.sample_id), 0) \
             AS DECIMAL(20,0)) AS delta \
         FROM perf_sample_read r JOIN perf_sample s \
           ON s.capture = r.capture AND s.sample_id = r.sample_id \
         WHERE r.event = {}) {alias} \
       ON {alias}.capture = p.capture AND {alias}.sample_id = p.sample_id",
        quote(event)
    )
}

/// Defines the `selected_sample` view: the samples of one event (the one
/// named, or the one with most samples), narrowed by the filter, with a
/// `cost` column (the weight), and the view `selected_stack`: samples (`n`)
/// and weight (`w`) per distinct stack. Returns the event used.
pub async fn select_samples(s: &Session, f: &SampleFilter, weight: &Weight) -> Result<String> {
    let event = choose_event(s, f.event.as_deref()).await?;
    let (expr, join) = match weight {
        Weight::Period => (
            "CAST(COALESCE(p.period, 1) AS BIGINT)".to_string(),
            String::new(),
        ),
        Weight::Samples => ("CAST(1 AS BIGINT)".to_string(), String::new()),
        Weight::Column(c) => (
            format!("CAST(COALESCE(p.\"{c}\", 0) AS BIGINT)"),
            String::new(),
        ),
        Weight::Read(e) => {
            let n: i64 = scalar_i64(
                s,
                &format!(
                    "SELECT count(*) FROM perf_sample_read WHERE event = {}",
                    quote(e)
                ),
            )
            .await?;
            if n == 0 {
                return Err(Error::Usage(format!(
                    "weight read:{e}: no counter of that event in perf_sample_read"
                )));
            }
            (
                "CAST(COALESCE(r.delta, 0) AS BIGINT)".to_string(),
                read_delta_join(e, "r"),
            )
        }
    };
    let w = f.where_clause(&event);
    s.sql(&format!(
        "CREATE OR REPLACE VIEW selected_sample AS SELECT p.*, {expr} AS cost FROM perf_sample p {join} WHERE {w}"
    ))
    .await?;
    // The stack analyses work per distinct stack: samples and weight.
    s.sql(
        "CREATE OR REPLACE VIEW selected_stack AS \
         SELECT capture, stack_id, count(*) AS n, sum(cost) AS w \
         FROM selected_sample WHERE stack_id IS NOT NULL GROUP BY capture, stack_id",
    )
    .await?;
    Ok(event)
}

async fn scalar_i64(s: &Session, q: &str) -> Result<i64> {
    use datafusion::arrow::array::AsArray;
    let b = s.sql(q).await?.collect().await?;
    Ok(b.first()
        .filter(|b| b.num_rows() > 0)
        .map(|b| {
            b.column(0)
                .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
                .value(0)
        })
        .unwrap_or(0))
}

fn weight_cols(weight: &Weight, prefix: &str, src: &str) -> String {
    match weight.name() {
        Some(n) => format!("COALESCE({src}.w, 0) AS \"{prefix}_{n}\","),
        None => String::new(),
    }
}

/// Exclusive and inclusive cost per function, module, source line or
/// address of the samples in `selected_sample`.
pub async fn hotspots(
    s: &Session,
    key: HotspotKey,
    weight: &Weight,
    opts: StackOpts,
) -> Result<DataFrame> {
    let (k1, k2, k3, name, ksel) = match key {
        HotspotKey::Function => (
            "e.function",
            "e.module",
            "NULL",
            "function",
            "t.key2 AS module,",
        ),
        HotspotKey::Module => ("e.module", "NULL", "NULL", "module", ""),
        HotspotKey::Address => (
            "concat(e.function, ' @ 0x', to_hex(e.rel_pc))",
            "e.module",
            "NULL",
            "address",
            "t.key2 AS module,",
        ),
        HotspotKey::Srcline => (
            "e.srcline",
            "e.module",
            "NULL",
            "srcline",
            "t.key2 AS module,",
        ),
        HotspotKey::Line => (
            "e.function",
            "e.file",
            "e.line",
            "function",
            "t.key2 AS file, t.key3 AS line,",
        ),
    };
    let q = HOTSPOTS
        .replace("{entry}", opts.entry_view())
        .replace("{key1_expr}", k1)
        .replace("{key2_expr}", k2)
        .replace("{key3_expr}", k3)
        .replace("{key1_name}", name)
        .replace("{key_select}", ksel)
        .replace("{self_weight}", &weight_cols(weight, "self", "s"))
        .replace("{total_weight}", &weight_cols(weight, "total", "t"));
    s.sql(&q).await
}

/// How a caller/callee report names the centre function.
#[derive(Clone, Debug, Default)]
pub struct FunctionMatch {
    /// Exact function name as the reports show it.
    pub function: String,
    /// Only positions in modules whose path contains this.
    pub module: Option<String>,
}

impl FunctionMatch {
    fn predicate(&self) -> String {
        let mut p = format!("e.function = {}", quote(&self.function));
        if let Some(m) = &self.module {
            p.push_str(&format!(" AND strpos(e.module, {}) > 0", quote(m)));
        }
        p
    }
}

/// Attributed metrics of the edges into `f` (seed 002): every sample whose
/// stack contains `f` is attributed once, to the caller of the outermost
/// occurrence of `f` (the caller that started a recursion), or to `<root>`
/// when `f` is where the stack begins. The `caller` rows sum to the
/// `function` row (inclusive).
pub async fn callers(
    s: &Session,
    f: &FunctionMatch,
    weight: &Weight,
    opts: StackOpts,
) -> Result<DataFrame> {
    edges(s, CALLERS, f, weight, opts).await
}

/// Attributed metrics of the edges out of `f`: every sample whose stack
/// contains `f` is attributed once, to the callee of the innermost
/// occurrence of `f`, or to `<self>` (the exclusive metric) when that
/// occurrence is the leaf. The `self` and `callee` rows sum to the
/// `function` row (inclusive).
pub async fn callees(
    s: &Session,
    f: &FunctionMatch,
    weight: &Weight,
    opts: StackOpts,
) -> Result<DataFrame> {
    edges(s, CALLEES, f, weight, opts).await
}

async fn edges(
    s: &Session,
    sql: &str,
    f: &FunctionMatch,
    weight: &Weight,
    opts: StackOpts,
) -> Result<DataFrame> {
    let n: i64 = scalar_i64(
        s,
        &format!(
            "SELECT count(*) FROM {} e WHERE {}",
            opts.entry_view(),
            f.predicate()
        ),
    )
    .await?;
    if n == 0 {
        return Err(Error::Usage(format!(
            "no stack contains a function named {:?}{} (names as `trawl report hotspots` shows them)",
            f.function,
            f.module
                .as_deref()
                .map(|m| format!(" in a module matching {m:?}"))
                .unwrap_or_default()
        )));
    }
    let wcol = match weight.name() {
        Some(n) => format!("w AS \"{n}\","),
        None => String::new(),
    };
    let q = sql
        .replace("{entry}", opts.entry_view())
        .replace("{match}", &f.predicate())
        .replace("{fname}", &quote(&f.function))
        .replace("{weight_col}", &wcol);
    s.sql(&q).await
}

/// Folded stacks (`root;...;leaf weight`), one line per distinct function
/// sequence, for flame graphs.
pub async fn folded(s: &Session, opts: StackOpts) -> Result<Vec<(String, i64)>> {
    use datafusion::arrow::array::AsArray;
    let q = FOLDED.replace("{entry}", opts.entry_view());
    let mut out = Vec::new();
    for b in s.sql(&q).await?.collect().await? {
        let names = crate::string_values(b.column(0));
        let w = b
            .column(1)
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        for (i, n) in names.into_iter().enumerate() {
            out.push((n.unwrap_or_default(), w.value(i)));
        }
    }
    Ok(out)
}
