//! Reading trawl's figures back for their content (not only their file
//! signature): the texts, polygons and rectangles of an SVG, the pixels
//! of a PNG.

use std::collections::HashMap;
use std::path::Path;

/// The attribute `name` of an element's opening tag.
pub fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    let j = tag[i..].find('"')?;
    Some(&tag[i..i + j])
}

/// The opening tags of every `<ELEMENT ...>` of an SVG.
pub fn tags<'a>(svg: &'a str, element: &str) -> Vec<&'a str> {
    let open = format!("<{element} ");
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find(&open) {
        let j = rest[i..].find('>').map_or(rest.len(), |j| i + j + 1);
        out.push(&rest[i..j]);
        rest = &rest[j..];
    }
    out
}

/// The contents of every `<text>` element, trimmed.
pub fn texts(svg: &str) -> Vec<String> {
    texts_at(svg).into_iter().map(|(t, _)| t).collect()
}

/// The contents of every `<text>` element, trimmed, with its `x`.
pub fn texts_at(svg: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find("<text") {
        let Some(a) = rest[i..].find('>') else { break };
        let Some(b) = rest[i + a..].find("</text>") else {
            break;
        };
        let x = attr(&rest[i..i + a + 1], "x").and_then(|x| x.parse().ok());
        out.push((
            rest[i + a + 1..i + a + b].trim().to_string(),
            x.unwrap_or(f64::NAN),
        ));
        rest = &rest[i + a + b..];
    }
    out
}

/// (fill, area in px²) of every `<polygon>`, by the shoelace formula.
pub fn polygons(svg: &str) -> Vec<(String, f64)> {
    tags(svg, "polygon")
        .into_iter()
        .map(|t| {
            let pts: Vec<(f64, f64)> = attr(t, "points")
                .unwrap_or("")
                .split_whitespace()
                .filter_map(|p| {
                    let (x, y) = p.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect();
            let mut a = 0.0;
            for i in 0..pts.len() {
                let (p, q) = (pts[i], pts[(i + 1) % pts.len()]);
                a += p.0 * q.1 - q.0 * p.1;
            }
            (attr(t, "fill").unwrap_or("").to_string(), a.abs() / 2.0)
        })
        .collect()
}

/// A decoded PNG.
pub fn png(path: &Path) -> image::RgbImage {
    image::open(path)
        .unwrap_or_else(|e| panic!("{}: not a readable PNG: {e}", path.display()))
        .to_rgb8()
}

/// Pixels of each colour.
pub fn colour_counts(img: &image::RgbImage) -> HashMap<[u8; 3], u64> {
    let mut m = HashMap::new();
    for p in img.pixels() {
        *m.entry(p.0).or_default() += 1;
    }
    m
}

/// `#RRGGBB` → bytes.
pub fn rgb(hex: &str) -> [u8; 3] {
    let h = hex.trim_start_matches('#');
    let b = |i: usize| u8::from_str_radix(&h[i..i + 2], 16).unwrap();
    [b(0), b(2), b(4)]
}
