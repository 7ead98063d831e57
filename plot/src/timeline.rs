//! `timeline(...)`'s rows as Fig. 10 of Morita et al., H/W resource
//! exhaustion analysis: the shares of the top keys per window, stacked,
//! with the ranges where a rule holds shaded.

use anyhow::{anyhow, Result};
use trawl_query::choice::Choice;
use trawl_query::datafusion::arrow::record_batch::RecordBatch;
use trawl_query::ranges::{RangeOpts, Rule};
use trawl_query::timeline::{grid, TimelineKey};
use trawl_query::Session;

use crate::{shares, Band, Image, Shares};

/// The figure's title: the capture, event, key, window and origin.
pub fn timeline_title(
    capture: &str,
    event: &str,
    key: TimelineKey,
    window: &str,
    t0: &str,
) -> String {
    format!(
        "{capture}: {event} by {} per {window} (t0: {t0})",
        key.name()
    )
}

/// The ranges where `rule` holds in `capture`, in seconds on its axis.
pub async fn rule_bands(
    s: &Session,
    rule: &Rule,
    opts: RangeOpts,
    capture: &str,
) -> Result<Vec<Band>> {
    Ok(trawl_query::ranges::ranges(s, rule, opts)
        .await?
        .get(capture)
        .map(|v| {
            v.iter()
                .map(|r| (r.start as f64 / 1e9, r.end as f64 / 1e9))
                .collect()
        })
        .unwrap_or_default())
}

/// Draws `capture`'s rows of `timeline(window_ns, ...)` (`batches`).
pub fn timeline(
    image: Image,
    batches: &[RecordBatch],
    capture: &str,
    window_ns: i64,
    title: &str,
    bands: &[Band],
) -> Result<Vec<u8>> {
    let g = grid(batches, capture, window_ns).ok_or_else(|| anyhow!("no samples to plot"))?;
    let s = Shares {
        windows: g.windows,
        width: window_ns as f64 / 1e9,
        keys: g.keys,
        pct: g.pct,
    };
    shares(image, title, &s, bands)
}

/// A timeline as both fronts ask for it (`trawl report timeline`, the
/// Python package's `timeline_plot`): the window as the user wrote it
/// (`100ms`), the key, how many keys by name, the event (default: the one
/// with most samples), branch entries as samples by an LBR method, and the
/// origin of times the session was opened with.
pub struct TimelineAsk<'a> {
    pub window: &'a str,
    pub by: TimelineKey,
    pub top: usize,
    pub event: Option<&'a str>,
    pub lbr: Option<&'a str>,
    pub t0: &'a str,
    /// Only these processes, threads, commands, times, captures.
    pub only: trawl_query::sample::SampleFilter,
}

/// A timeline's rows, the event they count and the window in ns.
pub struct TimelineRows {
    pub batches: Vec<RecordBatch>,
    pub event: String,
    pub window_ns: i64,
}

/// The rows of the timeline `ask` asks for.
pub async fn timeline_rows(s: &Session, ask: &TimelineAsk<'_>) -> Result<TimelineRows> {
    let window_ns = trawl_query::time::parse_duration_ns(ask.window)?;
    let lbr = ask.lbr.map(trawl_query::lbr::Method::parse).transpose()?;
    let (df, event) =
        trawl_query::timeline::timeline(s, window_ns, ask.by, ask.top, ask.event, lbr, &ask.only)
            .await?;
    Ok(TimelineRows {
        batches: df.collect().await?,
        event,
        window_ns,
    })
}

/// The figure of `rows` (asked for as `ask`), with the ranges where
/// `rule` holds shaded.
pub async fn timeline_plot(
    s: &Session,
    image: Image,
    ask: &TimelineAsk<'_>,
    rows: &TimelineRows,
    rule: Option<(Rule, RangeOpts)>,
) -> Result<Vec<u8>> {
    let figure = TimelineFigure {
        window: ask.window,
        window_ns: rows.window_ns,
        key: ask.by,
        event: &rows.event,
        t0: ask.t0,
        rule,
    };
    timeline_figure(s, image, &rows.batches, &figure).await
}

/// What a timeline figure shows besides its rows: how they were asked for
/// (the window as the user wrote it, for the title), the event they count,
/// the origin of times and the rule whose ranges are shaded.
pub struct TimelineFigure<'a> {
    pub window: &'a str,
    pub window_ns: i64,
    pub key: TimelineKey,
    pub event: &'a str,
    pub t0: &'a str,
    pub rule: Option<(Rule, RangeOpts)>,
}

/// The first capture's rows of `timeline(...)` (`batches`) as the figure
/// `f` describes: the CLI's `report timeline --plot` and the Python
/// package's `timeline_plot`.
pub async fn timeline_figure(
    s: &Session,
    image: Image,
    batches: &[RecordBatch],
    f: &TimelineFigure<'_>,
) -> Result<Vec<u8>> {
    let first = s
        .captures()
        .first()
        .map(|c| c.name.clone())
        .ok_or_else(|| anyhow!("no capture"))?;
    let bands = match &f.rule {
        Some((rule, opts)) => rule_bands(s, rule, *opts, &first).await?,
        None => Vec::new(),
    };
    let title = timeline_title(&first, f.event, f.key, f.window, f.t0);
    timeline(image, batches, &first, f.window_ns, &title, &bands)
}
