//! Address spaces: each process's executable mappings (MMAP/MMAP2 insert,
//! trimming or splitting what they overlap, as perf's
//! `maps__fixup_overlap_and_insert`), the modules they name, and an
//! instruction address turned into (module, file offset) at the time of a
//! sample.

use super::*;

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

fn insert_mapping(space: &mut AddressSpace, start: u64, e: MapEntry) {
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

fn lookup_with_start(space: &AddressSpace, ip: u64) -> Option<(u64, &MapEntry)> {
    space
        .range(..=ip)
        .next_back()
        .filter(|(_, m)| ip < m.end)
        .map(|(s, m)| (*s, m))
}

/// Is `path` a file whose offsets we can symbolize (as opposed to anonymous
/// memory or a special mapping)?
fn is_file_path(path: &str) -> bool {
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
fn module_name(path: &str, kernel: bool, pid: i32, hugetlb: bool) -> String {
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
fn is_perf_map_name(path: &str) -> bool {
    path.strip_prefix("/tmp/perf-")
        .and_then(|r| r.strip_suffix(".map"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

impl PerfConverter {
    pub(super) fn module_id(&mut self, m: &Mmap<'_>, path: &str, build_id: Option<String>) -> i64 {
        let kernel = m.cpu_mode().is_kernel();
        const MAP_HUGETLB: u32 = 0x40000;
        let hugetlb = m.flags.is_some_and(|f| f & MAP_HUGETLB != 0);
        let name = module_name(path, kernel, m.pid, hugetlb);
        let is_file = !kernel && !is_perf_map_name(&name) && is_file_path(path);
        self.stacks.module(name, build_id, kernel, is_file)
    }

    pub(super) fn handle_mmap(&mut self, m: &Mmap<'_>, sid: &SampleId) -> Result<()> {
        let path = String::from_utf8_lossy(m.path).into_owned();
        let kernel = m.cpu_mode().is_kernel();
        let build_id = m.build_id.map(hex);
        let module = self.module_id(m, &path, build_id.clone());
        let mid = self.next_mapping;
        self.next_mapping += 1;
        let t = sid.time.map(|t| t as i64);
        let utc = self.utc(t);
        let c = &mut self.mappings;
        c.mapping_id.append_value(mid);
        c.source_id.append_value(self.source_id);
        c.time_ns.append_option(t);
        c.time_utc.push(utc);
        c.pid.append_value(m.pid);
        c.tid.append_value(m.tid);
        c.start.append_value(m.start);
        c.length.append_value(m.len);
        c.pgoff.append_value(m.pgoff);
        c.path.append_value(&path);
        c.module_id.append_value(module);
        c.build_id.append_option(build_id.as_deref());
        c.prot.append_option(m.prot);
        c.flags.append_option(m.flags);
        c.dev_major.append_option(m.dev.map(|d| d.0));
        c.dev_minor.append_option(m.dev.map(|d| d.1));
        c.inode.append_option(m.dev.map(|d| d.2));
        c.executable.append_value(m.executable());
        c.cpu_mode.append_value(m.cpu_mode().as_str());
        self.mappings_out.rows += 1;
        if !m.executable() || m.len == 0 {
            return Ok(());
        }
        let entry = MapEntry {
            end: m.start.saturating_add(m.len),
            pgoff: m.pgoff,
            module,
            is_file: self.stacks.modules[module as usize].is_file,
        };
        self.next_gen += 1;
        let space = if kernel {
            self.kernel_space.entry(self.source_id).or_default()
        } else {
            self.spaces.entry((self.source_id, m.pid)).or_default()
        };
        insert_mapping(&mut space.map, m.start, entry);
        space.gen = self.next_gen;
        if kernel {
            self.kgen = self.next_gen;
        }
        Ok(())
    }

    /// The executable mappings of process `pid`, for the unwinder.
    pub(super) fn user_mappings(&self, pid: i32) -> Vec<crate::unwind::UserMapping> {
        let Some(space) = self.spaces.get(&(self.source_id, pid)) else {
            return Vec::new();
        };
        space
            .map
            .iter()
            .filter(|(_, m)| m.is_file && m.module >= 0)
            .filter_map(|(&start, m)| {
                let info = self.stacks.modules.get(m.module as usize)?;
                Some(crate::unwind::UserMapping {
                    start,
                    end: m.end,
                    pgoff: m.pgoff,
                    path: info.path.clone(),
                    build_id: info.build_id.clone(),
                })
            })
            .collect()
    }

    pub(super) fn frame(
        &mut self,
        pid: Option<i32>,
        ip: u64,
        mode: CpuMode,
        is_return: bool,
    ) -> i64 {
        let (module, rel) = {
            let space = if mode.is_kernel() {
                self.kernel_space.get(&self.source_id)
            } else {
                pid.and_then(|p| self.spaces.get(&(self.source_id, p)))
            };
            match space.and_then(|s| lookup_with_start(&s.map, ip)) {
                Some((start, m)) if m.is_file => (m.module, (ip - start).wrapping_add(m.pgoff)),
                Some((_, m)) => (m.module, ip),
                None => (-1, ip),
            }
        };
        self.stacks
            .frame(module, rel, mode.as_str(), is_return, pid, Some(ip))
    }
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
