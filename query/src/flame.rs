//! Flame graph input: the selected samples' stacks as a tree of frames
//! (root first), built in one pass over `stack` instead of a string per
//! stack position in SQL. The tree gives the folded lines
//! (`root;...;leaf weight`, the same as `folded(...)` in SQL) and, for
//! drawing, the same lines with the frames too narrow to be drawn folded
//! into their parent (inferno draws no frame under 0.01 % of the total;
//! the weight of a folded frame stays in its parent's width).
//!
//! Inputs: `stack_weight(...)` (the selection), `stack` and `frame_line` /
//! `frame_name` (the names, innermost inline level 0).

use std::collections::HashMap;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Int32Type, Int64Type};
use rustc_hash::FxHashMap;

use crate::error::Result;
use crate::sample::Selection;
use crate::session::Session;

/// The selected stacks as a tree of frames.
pub struct FrameTree {
    names: Vec<String>,
    /// Per node: its name, parent (u32::MAX for roots), total weight (the
    /// node and everything above it), own weight (samples that end there).
    name: Vec<u32>,
    parent: Vec<u32>,
    total: Vec<i64>,
    own: Vec<i64>,
}

const ROOT: u32 = u32::MAX;

/// The tree of the selected samples' stacks.
pub async fn frame_tree(s: &Session, sel: &Selection<'_>) -> Result<FrameTree> {
    // Segment names to small ids.
    let mut caps: HashMap<String, u32> = HashMap::new();
    // The selection: weight per (segment, stack).
    let mut weight: FxHashMap<(u32, i64), i64> = FxHashMap::default();
    for b in crate::functions::call(s, "stack_weight", &sel.sample_args())
        .await?
        .select_columns(&["segment", "stack_id", "w"])?
        .collect()
        .await?
    {
        let cap = crate::rows::string_ids(b.column(0), &mut caps)?;
        let id = b.column(1).as_primitive::<Int64Type>();
        let w = b.column(2).as_primitive::<Int64Type>();
        for (i, c) in cap.into_iter().enumerate() {
            if !id.is_null(i) {
                let k = (c, id.value(i));
                *weight.entry(k).or_default() += if w.is_null(i) { 0 } else { w.value(i) };
            }
        }
    }
    // Names of each frame, root-first (outermost inline level first).
    let mut names: Vec<String> = Vec::new();
    let mut name_ids: HashMap<String, u32> = HashMap::new();
    let mut frame_names: FxHashMap<(u32, i64), Vec<(i32, u32)>> = FxHashMap::default();
    let names_sql = if sel.opts.inline {
        "SELECT segment, frame_id, inline_depth, function FROM frame_line"
    } else {
        "SELECT segment, frame_id, 0 AS inline_depth, function FROM frame_name"
    };
    for b in s.sql(names_sql).await?.collect().await? {
        let cap = crate::rows::string_ids(b.column(0), &mut caps)?;
        let fid = b.column(1).as_primitive::<Int64Type>();
        let lvl = datafusion::arrow::compute::cast(
            b.column(2),
            &datafusion::arrow::datatypes::DataType::Int32,
        )
        .map_err(datafusion::error::DataFusionError::from)?;
        let lvl = lvl.as_primitive::<Int32Type>();
        let func = crate::rows::string_values(b.column(3));
        for (i, (c, f)) in cap.into_iter().zip(func).enumerate() {
            // The folded format separates the weight by a space: spaces in
            // names become U+00A0, as flamegraph.pl users do.
            let f = f.unwrap_or_default().replace(' ', "\u{a0}");
            let n = match name_ids.get(&f) {
                Some(&n) => n,
                None => {
                    let n = names.len() as u32;
                    names.push(f.clone());
                    name_ids.insert(f, n);
                    n
                }
            };
            frame_names
                .entry((c, fid.value(i)))
                .or_default()
                .push((lvl.value(i), n));
        }
    }
    for v in frame_names.values_mut() {
        v.sort_by(|a, b| b.0.cmp(&a.0));
    }
    // Stack positions of the selected stacks, leaf first.
    let mut positions: Vec<(u32, i64, i32, i64)> = Vec::new();
    for b in s
        .sql("SELECT segment, stack_id, depth, frame_id FROM stack")
        .await?
        .collect()
        .await?
    {
        let cap = crate::rows::string_ids(b.column(0), &mut caps)?;
        let id = b.column(1).as_primitive::<Int64Type>();
        let depth = b.column(2).as_primitive::<Int32Type>();
        let fid = b.column(3).as_primitive::<Int64Type>();
        for (i, c) in cap.into_iter().enumerate() {
            if weight.contains_key(&(c, id.value(i))) {
                positions.push((c, id.value(i), depth.value(i), fid.value(i)));
            }
        }
    }
    positions.sort_unstable();
    let mut t = FrameTree {
        names,
        name: Vec::new(),
        parent: Vec::new(),
        total: Vec::new(),
        own: Vec::new(),
    };
    let mut child: FxHashMap<(u32, u32), u32> = FxHashMap::default();
    let mut i = 0;
    while i < positions.len() {
        let (c, id) = (positions[i].0, positions[i].1);
        let mut j = i;
        while j < positions.len() && positions[j].0 == c && positions[j].1 == id {
            j += 1;
        }
        let w = weight[&(c, id)];
        let mut node = ROOT;
        // Root first: the deepest position, outermost inline level first.
        for p in positions[i..j].iter().rev() {
            let Some(levels) = frame_names.get(&(c, p.3)) else {
                continue;
            };
            for &(_, n) in levels {
                node = *child.entry((node, n)).or_insert_with(|| {
                    t.name.push(n);
                    t.parent.push(node);
                    t.total.push(0);
                    t.own.push(0);
                    (t.name.len() - 1) as u32
                });
                t.total[node as usize] += w;
            }
        }
        if node != ROOT {
            t.own[node as usize] += w;
        }
        i = j;
    }
    Ok(t)
}

impl FrameTree {
    /// The weight of all samples in the tree.
    pub fn total(&self) -> i64 {
        (0..self.name.len())
            .filter(|&i| self.parent[i] == ROOT)
            .map(|i| self.total[i])
            .sum()
    }

    /// The folded stacks as text, `root;...;leaf weight` per line (the
    /// format of flamegraph.pl and inferno), every node samples end in.
    pub fn folded_text(&self) -> String {
        self.folded(0)
            .iter()
            .map(|(st, w)| format!("{st} {w}\n"))
            .collect()
    }

    /// Folded lines (`root;...;leaf`, weight; spaces in names are U+00A0)
    /// of every node samples end in, sorted by the line; nodes whose total weight is below
    /// `min_total` are folded into their nearest ancestor that is not, or
    /// into their root (roots stay: the drawing's total must not shrink).
    pub fn folded(&self, min_total: i64) -> Vec<(String, i64)> {
        let n = self.name.len();
        let mut own = self.own.clone();
        // Children come after their parents: fold from the end.
        for i in (0..n).rev() {
            let p = self.parent[i];
            if self.total[i] < min_total && p != ROOT {
                own[p as usize] += own[i];
                own[i] = 0;
            }
        }
        let mut out = Vec::new();
        let mut path: Vec<&str> = Vec::new();
        for i in 0..n {
            if own[i] <= 0 || (self.total[i] < min_total && self.parent[i] != ROOT) {
                continue;
            }
            path.clear();
            let mut k = i as u32;
            while k != ROOT {
                path.push(&self.names[self.name[k as usize] as usize]);
                k = self.parent[k as usize];
            }
            path.reverse();
            out.push((path.join(";"), own[i]));
        }
        out.sort();
        out
    }
}
