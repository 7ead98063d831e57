//! The instruction-order × address heatmap of a memory access log: one
//! pass over `mem_access` into a bitmap, and the labels of its axes.

use super::*;

/// The accesses of one memory log in a heatmap's zoom.
const HEAT_ACCESS: &str = include_str!("../../analyses/memlog/inputs/heat_access.sql");

/// Which rows a heatmap has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Only pages touched at least once (rows not contiguous).
    Used,
    /// The whole address range, contiguous.
    Full,
}

#[derive(Clone, Debug)]
pub struct HeatOpts {
    pub view: View,
    /// Bytes per row (power of two); default: the page size (used view) or
    /// what makes about 1024 rows (full view).
    pub bytes_per_row: Option<u64>,
    /// Instructions per column; default: what makes about 1024 columns.
    pub instr_per_col: Option<u64>,
    /// Zoom: addresses [lo, hi).
    pub addr: Option<(u64, u64)>,
    /// Zoom: ordinals [lo, hi].
    pub ordinals: Option<(i64, i64)>,
    /// Only this input of the capture (default: the first memory log).
    pub source_id: Option<i32>,
    /// Refuse images larger than this many cells.
    pub max_cells: u64,
}

impl Default for HeatOpts {
    fn default() -> Self {
        HeatOpts {
            view: View::Used,
            bytes_per_row: None,
            instr_per_col: None,
            addr: None,
            ordinals: None,
            source_id: None,
            max_cells: 1 << 28,
        }
    }
}

/// Cell bits.
pub const LOAD: u8 = 1;
pub const STORE: u8 = 2;

/// An instruction-order × address bitmap: `cells[row * width + col]` has
/// [`LOAD`] and/or [`STORE`] set. Row 0 is the lowest address.
pub struct Heatmap {
    pub width: usize,
    pub height: usize,
    pub cells: Vec<u8>,
    /// Address range [start, end) of each row.
    pub rows: Vec<(u64, u64)>,
    pub ordinal0: i64,
    pub instr_per_col: u64,
    pub bytes_per_row: u64,
    pub source_id: i32,
    /// Accesses drawn.
    pub accesses: u64,
}

/// The accesses a heatmap draws (`heat_access.sql` with `params`).
async fn accesses(s: &Session, params: &[(&str, ScalarValue)]) -> Result<DataFrame> {
    s.sql_with(HEAT_ACCESS, params).await
}

/// Builds the heatmap of the first capture of the session.
pub async fn heatmap(s: &Session, o: &HeatOpts) -> Result<Heatmap> {
    if let Some(b) = o.bytes_per_row.filter(|b| !b.is_power_of_two()) {
        return Err(Error::Usage(format!(
            "bytes per row {b}: must be a power of two"
        )));
    }
    let cap = s
        .captures()
        .first()
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let source_id = match o.source_id {
        Some(x) => x,
        None => {
            let b = s
                .sql_with(
                    "SELECT CAST(min(source_id) AS BIGINT) FROM mem_page WHERE capture = $cap",
                    &[("cap", ScalarValue::from(cap.as_str()))],
                )
                .await?
                .collect()
                .await?;
            first_i64(&b, 0).ok_or_else(|| {
                Error::Usage(
                    "no memory log in the capture: ingest a lackey or binary memory log first"
                        .into(),
                )
            })? as i32
        }
    };
    let page_size = ingest_page_size(s).await?;
    // The accesses drawn: this capture's input, in the zoom asked for
    // (`heat_access.sql`); their extent, pages and rows are read from it.
    let params = [
        ("cap", ScalarValue::from(cap.as_str())),
        ("sid", ScalarValue::Int32(Some(source_id))),
        ("alo", ScalarValue::UInt64(o.addr.map(|a| a.0))),
        ("ahi", ScalarValue::UInt64(o.addr.map(|a| a.1))),
        ("olo", ScalarValue::Int64(o.ordinals.map(|a| a.0))),
        ("ohi", ScalarValue::Int64(o.ordinals.map(|a| a.1))),
    ];
    let b = accesses(s, &params)
        .await?
        .aggregate(
            vec![],
            vec![
                min(col("ordinal")),
                max(col("ordinal")),
                min(col("address")),
                max(col("address") + cast(col("size"), DataType::UInt64)),
                count(lit(1)),
            ],
        )?
        .collect()
        .await?;
    let (Some(omin), Some(omax)) = (first_i64(&b, 0), first_i64(&b, 1)) else {
        return Err(Error::Usage(
            "no memory accesses in the range asked for".into(),
        ));
    };
    let (o0, o1) = o.ordinals.unwrap_or((omin, omax));
    let span = (o1 - o0 + 1).max(1) as u64;
    let ipc = o
        .instr_per_col
        .unwrap_or_else(|| span.div_ceil(1024).next_power_of_two())
        .max(1);
    let width = span.div_ceil(ipc) as usize;
    let amin = b[0].column(2).as_primitive::<UInt64Type>().value(0);
    let amax = b[0].column(3).as_primitive::<UInt64Type>().value(0);
    // Rows.
    let (bpr, rows): (u64, Vec<(u64, u64)>) = match o.view {
        View::Used => {
            let bpr = o.bytes_per_row.unwrap_or(page_size);
            let shift = page_size.trailing_zeros();
            let page = col("address") / lit(1u64 << shift);
            let pb = accesses(s, &params)
                .await?
                .select(vec![page.alias("p")])?
                .distinct()?
                .sort(vec![col("p").sort(true, false)])?
                .collect()
                .await?;
            let mut pages = Vec::new();
            for b in &pb {
                let c = b.column(0).as_primitive::<UInt64Type>();
                pages.extend((0..b.num_rows()).map(|i| c.value(i) << shift));
            }
            // Check the size before building the rows: tiny rows of many
            // pages would otherwise allocate first and refuse after.
            let n = if bpr <= page_size {
                pages.len() as u64 * (page_size / bpr)
            } else {
                (pages.len() as u64).div_ceil(bpr / page_size)
            };
            if n.saturating_mul(width as u64) > o.max_cells {
                return Err(Error::Usage(format!(
                    "{width} columns × {n} rows is too large an image: raise the instructions per column or bytes per row, or zoom"
                )));
            }
            let mut rows = Vec::with_capacity(n as usize);
            if bpr <= page_size {
                for p in &pages {
                    rows.extend((0..page_size / bpr).map(|k| (p + k * bpr, p + (k + 1) * bpr)));
                }
            } else {
                // Several used pages per row: the row spans from the first
                // one's start to the last one's end.
                let per = (bpr / page_size) as usize;
                for g in pages.chunks(per) {
                    rows.push((g[0], g[g.len() - 1] + page_size));
                }
            }
            (bpr, rows)
        }
        View::Full => {
            let (lo, hi) = o.addr.unwrap_or((amin, amax.max(amin + 1)));
            let bpr = o
                .bytes_per_row
                .unwrap_or_else(|| (hi - lo).div_ceil(1024).next_power_of_two().max(1));
            let lo = lo / bpr * bpr;
            let n = (hi - lo).div_ceil(bpr);
            if n.saturating_mul(width as u64) > o.max_cells || n > 1 << 20 {
                return Err(Error::Usage(format!(
                    "the full-range view of {lo:#x}..{hi:#x} at {bpr} bytes per row has {n} rows: choose more bytes per row, zoom with an address range, or use the used-pages view"
                )));
            }
            (
                bpr,
                (0..n).map(|k| (lo + k * bpr, lo + (k + 1) * bpr)).collect(),
            )
        }
    };
    let height = rows.len();
    if (height as u64).saturating_mul(width as u64) > o.max_cells {
        return Err(Error::Usage(format!(
            "{width} columns × {height} rows is too large an image: raise the instructions per column or bytes per row, or zoom"
        )));
    }
    let mut cells = vec![0u8; width * height];
    // Row of an address: used view searches the row starts; both views
    // then walk rows while the access continues.
    let starts: Vec<u64> = rows.iter().map(|r| r.0).collect();
    let row_of = |a: u64| -> Option<usize> {
        let i = starts.partition_point(|&s| s <= a);
        (i > 0 && a < rows[i - 1].1).then(|| i - 1)
    };
    let mut stream = accesses(s, &params).await?.execute_stream().await?;
    let mut accesses = 0u64;
    while let Some(b) = stream.next().await {
        let b = b?;
        let ord = b.column(0).as_primitive::<Int64Type>();
        let kind = crate::rows::string_values(b.column(1));
        let addr = b.column(2).as_primitive::<UInt64Type>();
        let size = b.column(3).as_primitive::<Int32Type>();
        for i in 0..b.num_rows() {
            let bits = match kind[i].as_deref() {
                Some("S") => STORE,
                Some("M") => LOAD | STORE,
                _ => LOAD,
            };
            let col = ((ord.value(i) - o0) as u64 / ipc) as usize;
            if col >= width {
                continue;
            }
            let a = addr.value(i);
            let end = a.saturating_add(size.value(i).max(1) as u64);
            let Some(mut r) = row_of(a) else { continue };
            accesses += 1;
            loop {
                cells[r * width + col] |= bits;
                r += 1;
                if r >= height || rows[r].0 >= end {
                    break;
                }
            }
        }
    }
    Ok(Heatmap {
        width,
        height,
        cells,
        rows,
        ordinal0: o0,
        instr_per_col: ipc,
        bytes_per_row: bpr,
        source_id,
        accesses,
    })
}

/// What the ordinals of memory-log input `source_id` of the first capture
/// count (`capture_meta.mem_x_axis`): `instruction`, or `access` for a
/// data-only log; `instruction` for captures written before it was said.
pub async fn x_axis(s: &Session, source_id: i32) -> Result<String> {
    let cap = s
        .captures()
        .first()
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let b = s
        .sql_with(
            "SELECT value FROM capture_meta WHERE capture = $cap AND source_id = $sid AND key = 'mem_x_axis'",
            &[
                ("cap", ScalarValue::from(cap.as_str())),
                ("sid", ScalarValue::Int32(Some(source_id))),
            ],
        )
        .await?
        .collect()
        .await?;
    Ok(b.iter()
        .find(|b| b.num_rows() > 0)
        .and_then(|b| crate::rows::string_values(b.column(0))[0].clone())
        .unwrap_or_else(|| "instruction".into()))
}

/// What each heatmap row holds: its mapped object and the symbol at (or
/// overlapping) its start, from `mem_map` / `mem_symbol`.
pub async fn row_labels(s: &Session, rows: &[(u64, u64)]) -> Result<Vec<(String, String)>> {
    let cap = s
        .captures()
        .first()
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let load = |q: &'static str| {
        let cap = cap.clone();
        async move {
            let b = s
                .sql_with(q, &[("cap", ScalarValue::from(cap.as_str()))])
                .await?
                .collect()
                .await?;
            let mut v: Vec<(u64, u64, String)> = Vec::new();
            for b in &b {
                let st = b.column(0).as_primitive::<UInt64Type>();
                let en = b.column(1).as_primitive::<UInt64Type>();
                let n = crate::rows::string_values(b.column(2));
                for i in 0..b.num_rows() {
                    v.push((st.value(i), en.value(i), n[i].clone().unwrap_or_default()));
                }
            }
            v.sort_by_key(|e| e.0);
            Ok::<_, Error>(v)
        }
    };
    let maps = load(
        "SELECT start_address, end_address, CASE WHEN path = '' THEN '[anon]' ELSE path END FROM mem_map WHERE capture = $cap",
    )
    .await?;
    let syms = load("SELECT start_address, end_address, name FROM mem_symbol WHERE capture = $cap")
        .await?;
    let find = |v: &[(u64, u64, String)], lo: u64, hi: u64| -> String {
        // The last entry starting before hi that ends after lo.
        let i = v.partition_point(|e| e.0 < hi);
        v[..i]
            .iter()
            .rev()
            .take(64)
            .find(|e| e.1 > lo)
            .map(|e| e.2.clone())
            .unwrap_or_default()
    };
    Ok(rows
        .iter()
        .map(|&(lo, hi)| (find(&maps, lo, hi), find(&syms, lo, hi)))
        .collect())
}

impl crate::choice::Choice for View {
    const ALL: &'static [Self] = &[Self::Used, Self::Full];
    fn name(self) -> &'static str {
        match self {
            Self::Used => "used",
            Self::Full => "full",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            Self::Used => "only pages touched at least once (rows not contiguous)",
            Self::Full => "the whole address range (or --addr-range), contiguous",
        }
    }
}
