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
/// No process frame at the root.
const NO_ROOT: u32 = u32::MAX;

/// The tree of the selected samples' stacks.
pub async fn frame_tree(s: &Session, sel: &Selection<'_>) -> Result<FrameTree> {
    // Segment names to small ids.
    let mut caps: HashMap<String, u32> = HashMap::new();
    // The selection: weight per (segment, stack), and per process
    // (`comm-pid`, a name of `names`) with a process root.
    let mut names: Vec<String> = Vec::new();
    let mut name_ids: HashMap<String, u32> = HashMap::new();
    let mut weight: FxHashMap<(u32, i64), i64> = FxHashMap::default();
    let mut per_process: FxHashMap<(u32, i64), Vec<(u32, i64)>> = FxHashMap::default();
    let df = if sel.opts.process_root {
        use datafusion::functions_aggregate::expr_fn::sum;
        use datafusion::prelude::{cast, col, concat, lit};
        let name = concat(vec![
            cast(col("comm"), datafusion::arrow::datatypes::DataType::Utf8),
            lit("-"),
            cast(col("pid"), datafusion::arrow::datatypes::DataType::Utf8),
        ]);
        crate::functions::call(s, "selected_sample", &sel.sample_args())
            .await?
            .filter(col("stack_id").is_not_null())?
            .aggregate(
                vec![col("segment"), col("stack_id"), name.alias("process")],
                vec![sum(col("cost")).alias("w")],
            )?
            .select_columns(&["segment", "stack_id", "w", "process"])?
    } else {
        crate::functions::call(s, "stack_weight", &sel.sample_args())
            .await?
            .select_columns(&["segment", "stack_id", "w"])?
    };
    for b in df.collect().await? {
        let cap = crate::rows::string_ids(b.column(0), &mut caps)?;
        let id = b.column(1).as_primitive::<Int64Type>();
        let w = datafusion::arrow::compute::cast(
            b.column(2),
            &datafusion::arrow::datatypes::DataType::Int64,
        )
        .map_err(datafusion::error::DataFusionError::from)?;
        let w = w.as_primitive::<Int64Type>();
        let process = (b.num_columns() > 3).then(|| crate::rows::string_values(b.column(3)));
        for (i, c) in cap.into_iter().enumerate() {
            if !id.is_null(i) {
                let root = match &process {
                    Some(p) => {
                        let f = p[i]
                            .clone()
                            .unwrap_or_else(|| "?".into())
                            .replace(' ', "\u{a0}");
                        match name_ids.get(&f) {
                            Some(&n) => n,
                            None => {
                                let n = names.len() as u32;
                                names.push(f.clone());
                                name_ids.insert(f, n);
                                n
                            }
                        }
                    }
                    None => NO_ROOT,
                };
                let wi = if w.is_null(i) { 0 } else { w.value(i) };
                let k = (c, id.value(i));
                *weight.entry(k).or_default() += wi;
                if root != NO_ROOT {
                    let e = per_process.entry(k).or_default();
                    match e.iter_mut().find(|(r, _)| *r == root) {
                        Some((_, x)) => *x += wi,
                        None => e.push((root, wi)),
                    }
                }
            }
        }
    }
    // Names of each frame, root-first (outermost inline level first).
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
        let whole = [(NO_ROOT, weight[&(c, id)])];
        let parts: &[(u32, i64)] = per_process.get(&(c, id)).map_or(&whole, Vec::as_slice);
        for &(root, w) in parts {
            // The process, then the deepest position, outermost inline
            // level first.
            let mut node = ROOT;
            if root != NO_ROOT {
                node = t.step(&mut child, node, root, w);
            }
            for p in positions[i..j].iter().rev() {
                let Some(levels) = frame_names.get(&(c, p.3)) else {
                    continue;
                };
                for &(_, n) in levels {
                    node = t.step(&mut child, node, n, w);
                }
            }
            if node != ROOT {
                t.own[node as usize] += w;
            }
        }
        i = j;
    }
    Ok(t)
}

impl FrameTree {
    /// The child `n` of `node` (made when new), its total raised by `w`.
    fn step(&mut self, child: &mut FxHashMap<(u32, u32), u32>, node: u32, n: u32, w: i64) -> u32 {
        let next = *child.entry((node, n)).or_insert_with(|| {
            self.name.push(n);
            self.parent.push(node);
            self.total.push(0);
            self.own.push(0);
            (self.name.len() - 1) as u32
        });
        self.total[next as usize] += w;
        next
    }

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
        self.folded_within(min_total, usize::MAX)
    }

    /// Each node's depth, roots 1 (parents come before their children).
    fn depths(&self) -> Vec<usize> {
        let mut d = vec![1usize; self.name.len()];
        for i in 0..self.name.len() {
            let p = self.parent[i];
            if p != ROOT {
                d[i] = d[p as usize] + 1;
            }
        }
        d
    }

    /// The depth a drawing needs: the deepest level whose frames together
    /// weigh at least `share` of the total (a few deep stacks, such as one
    /// broken unwind of 127 frames, would otherwise set the picture's
    /// height). At least 1.
    pub fn depth_holding(&self, share: f64) -> usize {
        let depth = self.depths();
        let mut at: Vec<i64> = Vec::new();
        for (i, &d) in depth.iter().enumerate() {
            if at.len() < d {
                at.resize(d, 0);
            }
            at[d - 1] += self.total[i];
        }
        let min = (self.total() as f64 * share).ceil() as i64;
        at.iter()
            .rposition(|&w| w >= min.max(1))
            .map_or(1, |k| k + 1)
    }

    /// [`FrameTree::folded`], with frames deeper than `max_depth` folded
    /// into one frame `[deeper frames]` above their ancestor at that depth.
    pub fn folded_within(&self, min_total: i64, max_depth: usize) -> Vec<(String, i64)> {
        let n = self.name.len();
        // Depths only when some are cut.
        let depth = if max_depth == usize::MAX {
            Vec::new()
        } else {
            self.depths()
        };
        let mut own = self.own.clone();
        // Weight of the frames folded away above a node for depth.
        let mut deep = vec![0i64; n];
        // Children come after their parents: fold from the end.
        for i in (0..n).rev() {
            let p = self.parent[i];
            if p == ROOT {
                continue;
            }
            let p = p as usize;
            if !depth.is_empty() && depth[i] > max_depth {
                deep[p] += own[i] + deep[i];
                (own[i], deep[i]) = (0, 0);
            } else if self.total[i] < min_total {
                own[p] += own[i];
                deep[p] += deep[i];
                (own[i], deep[i]) = (0, 0);
            }
        }
        let mut out = Vec::new();
        let mut path: Vec<&str> = Vec::new();
        for i in 0..n {
            if own[i] <= 0 && deep[i] <= 0 {
                continue;
            }
            path.clear();
            let mut k = i as u32;
            while k != ROOT {
                path.push(&self.names[self.name[k as usize] as usize]);
                k = self.parent[k as usize];
            }
            path.reverse();
            let line = path.join(";");
            if deep[i] > 0 {
                out.push((format!("{line};[deeper frames]"), deep[i]));
            }
            if own[i] > 0 {
                out.push((line, own[i]));
            }
        }
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree of `(root;...;leaf, weight)` stacks.
    fn tree(stacks: &[(&str, i64)]) -> FrameTree {
        let mut t = FrameTree {
            names: Vec::new(),
            name: Vec::new(),
            parent: Vec::new(),
            total: Vec::new(),
            own: Vec::new(),
        };
        let mut child: HashMap<(u32, String), u32> = HashMap::new();
        for (st, w) in stacks {
            let mut node = ROOT;
            for f in st.split(';') {
                node = *child.entry((node, f.to_string())).or_insert_with(|| {
                    t.names.push(f.to_string());
                    t.name.push((t.names.len() - 1) as u32);
                    t.parent.push(node);
                    t.total.push(0);
                    t.own.push(0);
                    (t.name.len() - 1) as u32
                });
                t.total[node as usize] += w;
            }
            t.own[node as usize] += w;
        }
        t
    }

    /// One stack of 1 in 1,000 samples 40 frames deep: the drawing stops
    /// at the depth the other 999 reach (worked by hand), its frames
    /// beyond one `[deeper frames]` of weight 1; the weights add up.
    #[test]
    fn a_rare_deep_stack_does_not_set_the_height() {
        let deep: Vec<String> = (0..40).map(|k| format!("f{k}")).collect();
        let deep = format!("main;{}", deep.join(";"));
        let t = tree(&[("main;a;b", 600), ("main;c", 399), (&deep, 1)]);
        assert_eq!(t.depth_holding(0.005), 3);
        assert_eq!(t.depth_holding(0.0), 41);
        let lines = t.folded_within(0, 3);
        assert_eq!(
            lines,
            vec![
                ("main;a;b".to_string(), 600),
                ("main;c".to_string(), 399),
                ("main;f0;f1;[deeper frames]".to_string(), 1),
            ]
        );
        assert_eq!(t.folded(0).len(), 3);
        assert!(t
            .folded(0)
            .iter()
            .any(|(l, w)| l.ends_with(";f39") && *w == 1));
    }
}
