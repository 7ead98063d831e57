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

use serde::Serialize;
use trawl_query::profile::StackProfile;

#[derive(Serialize)]
struct File<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    shared: Shared,
    profiles: Vec<SampledProfile>,
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
struct SampledProfile {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: i64,
    #[serde(rename = "endValue")]
    end_value: i64,
    samples: Vec<Vec<u32>>,
    weights: Vec<i64>,
}

/// The profile in speedscope's JSON file format. `exporter` names the
/// program (e.g. `trawl 0.1.0`).
pub fn write(p: &StackProfile, exporter: &str) -> anyhow::Result<Vec<u8>> {
    let unit = match crate::weight_unit(p) {
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
    // A stack as frame indexes, root first.
    let stack_frames = |k: u32| -> Vec<u32> {
        let mut out = Vec::new();
        for &l in p.stacks[k as usize].iter().rev() {
            for line in p.locations[l as usize].lines.iter().rev() {
                out.push(frame_of[&line.function]);
            }
        }
        out
    };
    let mut cache: HashMap<u32, Vec<u32>> = HashMap::default();
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
                samples: Vec::new(),
                weights: Vec::new(),
            });
            profiles.len() - 1
        });
        let pr = &mut profiles[i];
        let stack = match s.stack {
            Some(k) => cache.entry(k).or_insert_with(|| stack_frames(k)).clone(),
            None => Vec::new(),
        };
        pr.samples.push(stack);
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
