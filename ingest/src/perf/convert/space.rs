//! Address spaces: each process's executable mappings (MMAP/MMAP2 insert,
//! trimming or splitting what they overlap, as perf's
//! `maps__fixup_overlap_and_insert`), the module names perf gives them,
//! and the lookup the converter turns an instruction address into
//! (module, file offset) with, at the time of a sample.

use std::collections::BTreeMap;

/// One executable mapping: where it ends, its file offset, its module.
#[derive(Clone, Debug)]
pub(super) struct MapEntry {
    pub(super) end: u64,
    pub(super) pgoff: u64,
    pub(super) module: i64,
    pub(super) is_file: bool,
}

/// A process's executable mappings, keyed by start address.
pub(super) type AddressSpace = BTreeMap<u64, MapEntry>;

/// An address space and its generation: a number that changes whenever
/// the mappings do, so resolved stacks can be cached per generation.
#[derive(Clone, Default)]
pub(super) struct Space {
    pub(super) map: AddressSpace,
    pub(super) gen: u64,
}

/// Inserts a mapping at `start`, trimming or splitting those it overlaps.
pub(super) fn insert_mapping(space: &mut AddressSpace, start: u64, e: MapEntry) {
    let end = e.end;
    // Trim or split what the new mapping covers (perf's
    // maps__fixup_overlap_and_insert).
    let overlapping: Vec<u64> = space
        .range(..end)
        .rev()
        .take_while(|(_, m)| m.end > start)
        .map(|(&s, _)| s)
        .collect();
    for s in overlapping {
        let old = space.remove(&s).unwrap();
        if s < start {
            let mut left = old.clone();
            left.end = start;
            space.insert(s, left);
        }
        if old.end > end {
            let mut right = old.clone();
            right.pgoff = old.pgoff.wrapping_add(end - s);
            space.insert(end, right);
        }
    }
    space.insert(start, e);
}

/// The mapping that holds `ip`, with its start address.
pub(super) fn lookup_with_start(space: &AddressSpace, ip: u64) -> Option<(u64, &MapEntry)> {
    space
        .range(..=ip)
        .next_back()
        .filter(|(_, m)| ip < m.end)
        .map(|(s, m)| (*s, m))
}

/// Is `path` a file whose offsets we can symbolize (as opposed to anonymous
/// memory or a special mapping)?
pub(super) fn is_file_path(path: &str) -> bool {
    (path.starts_with('/')
        && !path.starts_with("//")
        && !path.starts_with("/memfd:")
        && !path.starts_with("/dev/zero")
        && !path.starts_with("/SYSV"))
        || path == "[vdso]"
}

/// The module a mapping belongs to, named as perf names its DSO: the kernel
/// image's mappings are `[kernel.kallsyms]`; anonymous memory (`//anon`,
/// `/dev/zero`, `/anon_hugepage`, huge-page mappings) and the heap, stacks
/// and SysV segments of process PID are `/tmp/perf-PID.map`, the file in
/// which JIT compilers name the code they generate (perf's `map__new`).
pub(super) fn module_name(path: &str, kernel: bool, pid: i32, hugetlb: bool) -> String {
    if kernel && path.starts_with("[kernel.kallsyms]") {
        "[kernel.kallsyms]".to_string()
    } else if !kernel && pid >= 0 && (is_anon_memory(path) || hugetlb || is_no_dso_memory(path)) {
        format!("/tmp/perf-{pid}.map")
    } else {
        path.to_string()
    }
}

fn is_anon_memory(path: &str) -> bool {
    path == "//anon" || path.starts_with("/dev/zero") || path.starts_with("/anon_hugepage")
}

fn is_no_dso_memory(path: &str) -> bool {
    path.starts_with("[stack") || path.starts_with("/SYSV") || path == "[heap]"
}

/// Is `path` a module name given to anonymous memory of a process (see
/// [`module_name`])?
pub(super) fn is_perf_map_name(path: &str) -> bool {
    path.strip_prefix("/tmp/perf-")
        .and_then(|r| r.strip_suffix(".map"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(space: &AddressSpace, ip: u64) -> Option<&MapEntry> {
        space
            .range(..=ip)
            .next_back()
            .map(|(s, m)| (*s, m))
            .filter(|(_, m)| ip < m.end)
            .map(|(s, m)| {
                let _ = s;
                m
            })
    }

    fn e(end: u64, pgoff: u64, module: i64) -> MapEntry {
        MapEntry {
            end,
            pgoff,
            module,
            is_file: true,
        }
    }

    #[test]
    fn overlapping_mmap_splits_the_old_mapping() {
        let mut s = AddressSpace::new();
        insert_mapping(&mut s, 0x1000, e(0x5000, 0, 1));
        insert_mapping(&mut s, 0x2000, e(0x3000, 0, 2));
        assert_eq!(lookup(&s, 0x1800).unwrap().module, 1);
        assert_eq!(lookup(&s, 0x2800).unwrap().module, 2);
        let (start, right) = lookup_with_start(&s, 0x4000).unwrap();
        assert_eq!((start, right.module, right.pgoff), (0x3000, 1, 0x2000));
        assert!(lookup(&s, 0x5000).is_none());
        assert!(lookup(&s, 0x0fff).is_none());
    }
}
