//! What the power analyses read from a capture: counter increases at the
//! samples, sampled periods, a counter's intervals and readings (the
//! statements under `analyses/energy/inputs/`), and the events there are.

use std::collections::BTreeMap;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use datafusion::common::ScalarValue;

use crate::error::Result;
use crate::session::Session;

/// Counter increases read at the samples.
pub(super) const COUNTER_READS: &str =
    include_str!("../../analyses/energy/inputs/counter_reads.sql");
/// Samples of events, weighing their periods.
pub(super) const SAMPLED_EVENTS: &str =
    include_str!("../../analyses/energy/inputs/sampled_events.sql");
/// One counter's intervals.
pub(super) const COUNTER_INTERVALS: &str =
    include_str!("../../analyses/energy/inputs/counter_intervals.sql");
/// One counter's readings in time order.
pub(super) const COUNTER_CURVE: &str =
    include_str!("../../analyses/energy/inputs/counter_curve.sql");

/// Samples' times and a value per event, in time order.
pub(super) type Series = BTreeMap<String, Vec<(i64, f64)>>;

pub(super) async fn series(s: &Session, q: &str, params: &[(&str, ScalarValue)]) -> Result<Series> {
    let mut out: Series = BTreeMap::new();
    for b in s.sql_with(q, params).await?.collect().await? {
        let ev = crate::rows::string_values(b.column(0));
        let t = b.column(1).as_primitive::<Int64Type>();
        let v = b.column(2).as_primitive::<Float64Type>();
        for i in 0..b.num_rows() {
            if t.is_null(i) || v.is_null(i) {
                continue;
            }
            out.entry(ev[i].clone().unwrap_or_default())
                .or_default()
                .push((t.value(i), v.value(i)));
        }
    }
    for v in out.values_mut() {
        v.sort_by_key(|x| x.0);
    }
    Ok(out)
}

/// A text list parameter.
pub(super) fn text_list(v: &[String]) -> ScalarValue {
    let items: Vec<ScalarValue> = v.iter().map(|e| ScalarValue::from(e.as_str())).collect();
    ScalarValue::List(ScalarValue::new_list_nullable(
        &items,
        &datafusion::arrow::datatypes::DataType::Utf8,
    ))
}

/// `$cap`, `$src`, `$zone`: the counter of `chain`.
pub(super) fn chain_params(
    chain: &crate::rapl::Chain,
    package: Option<i32>,
) -> [(&'static str, ScalarValue); 4] {
    [
        ("cap", ScalarValue::from(chain.capture.as_str())),
        ("src", ScalarValue::Int32(Some(chain.source_id))),
        ("zone", ScalarValue::from(chain.zone.as_str())),
        ("package", ScalarValue::Int32(package)),
    ]
}

async fn strings(s: &Session, q: &str, params: &[(&str, ScalarValue)]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for b in s.sql_with(q, params).await?.collect().await? {
        out.extend(
            crate::rows::string_values(b.column(0))
                .into_iter()
                .flatten(),
        );
    }
    Ok(out)
}

/// Counters read at the samples (group members), power events excepted.
pub async fn read_events(s: &Session) -> Result<Vec<String>> {
    strings(
        s,
        include_str!("../../analyses/energy/inputs/read_events.sql"),
        &[],
    )
    .await
}

/// Sampled events other than `time_event`, power events excepted.
pub async fn sampled_events(s: &Session, time_event: &str) -> Result<Vec<String>> {
    strings(
        s,
        include_str!("../../analyses/energy/inputs/other_sampled_events.sql"),
        &[("time_event", ScalarValue::from(time_event))],
    )
    .await
}
