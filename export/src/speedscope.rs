//! speedscope's file format (https://www.speedscope.app/file-format-schema.json):
//! one `sampled` profile per thread, its samples in time order (the
//! "Time Order" view), each a list of frame indexes root first with its
//! weight.
//!
//! - unit: `nanoseconds` for the period of a clock event (`cpu-clock`,
//!   `task-clock`), else `none` (counts);
//! - a frame is a function (each inline level a frame of its own), with
//!   the source file DWARF gave for it; no line, since speedscope would
//!   show each line of a function as a different function;
//! - the thread with the most weight is shown first.

use rustc_hash::FxHashMap as HashMap;

use serde::{Serialize, Serializer};
use trawl_query::profile::StackProfile;

#[derive(Serialize)]
struct File<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    shared: Shared,
    profiles: Vec<SampledProfile<'a>>,
    name: String,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: usize,
    exporter: &'a str,
}

#[derive(Serialize)]
struct Shared {
    frames: Vec<FrameOut>,
}

#[derive(Serialize)]
struct FrameOut {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
}

#[derive(Serialize)]
struct SampledProfile<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: i64,
    #[serde(rename = "endValue")]
    end_value: i64,
    samples: Samples<'a>,
    weights: Vec<i64>,
}

/// A thread's samples as stack numbers, written out as each stack's list
/// of frame indexes: the file repeats a stack once per sample, memory
/// holds it once.
struct Samples<'a> {
    stacks: &'a [Vec<u32>],
    of: Vec<u32>,
}

/// A sample without a stack (an empty list of frames).
const NO_STACK: u32 = u32::MAX;

impl Serialize for Samples<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.of.iter().map(|&k| match k {
            NO_STACK => &[][..],
            k => &self.stacks[k as usize][..],
        }))
    }
}

/// The profile in speedscope's JSON file format. `exporter` names the
/// program (e.g. `trawl 0.1.0`).
pub fn write(p: &StackProfile, exporter: &str) -> anyhow::Result<Vec<u8>> {
    let unit = match crate::units::weight_unit(p) {
        "nanoseconds" => "nanoseconds",
        _ => "none",
    };
    // Frames: one per function name; its file is the first one DWARF gave
    // for it in location order.
    let mut frames: Vec<FrameOut> = Vec::new();
    let mut frame_of: HashMap<u32, u32> = HashMap::default();
    for loc in &p.locations {
        for l in &loc.lines {
            let n = frames.len() as u32;
            let f = *frame_of.entry(l.function).or_insert_with(|| {
                frames.push(FrameOut {
                    name: p.str(l.function).to_string(),
                    file: None,
                });
                n
            });
            if frames[f as usize].file.is_none() {
                frames[f as usize].file = l.file.map(|x| p.str(x).to_string());
            }
        }
    }
    // Each stack as frame indexes, root first.
    let stacks: Vec<Vec<u32>> = p
        .stacks
        .iter()
        .map(|locs| {
            locs.iter()
                .rev()
                .flat_map(|&l| p.locations[l as usize].lines.iter().rev())
                .map(|line| frame_of[&line.function])
                .collect()
        })
        .collect();
    let several = p.captures.len() > 1;
    let mut profiles: Vec<SampledProfile> = Vec::new();
    let mut index: HashMap<(u32, i32, i32), usize> = HashMap::default();
    for s in &p.samples {
        let i = *index.entry((s.capture, s.pid, s.tid)).or_insert_with(|| {
            let mut name = format!("{} ({}/{})", p.str(s.comm), s.pid, s.tid);
            if several {
                name = format!("{name} {}", p.captures[s.capture as usize]);
            }
            profiles.push(SampledProfile {
                kind: "sampled",
                name,
                unit,
                start_value: 0,
                end_value: 0,
                samples: Samples {
                    stacks: &stacks,
                    of: Vec::new(),
                },
                weights: Vec::new(),
            });
            profiles.len() - 1
        });
        let pr = &mut profiles[i];
        pr.samples.of.push(s.stack.unwrap_or(NO_STACK));
        pr.weights.push(s.weight);
        pr.end_value = pr.end_value.saturating_add(s.weight);
    }
    let active = profiles
        .iter()
        .enumerate()
        .max_by_key(|(i, pr)| (pr.end_value, std::cmp::Reverse(*i)))
        .map_or(0, |(i, _)| i);
    let name = format!(
        "{} ({}{})",
        p.captures.join(", "),
        p.event,
        p.weight
            .as_deref()
            .map(|w| format!(", {w}"))
            .unwrap_or_default()
    );
    Ok(serde_json::to_vec(&File {
        schema: "https://www.speedscope.app/file-format-schema.json",
        shared: Shared { frames },
        profiles,
        name,
        active_profile_index: active,
        exporter,
    })?)
}
