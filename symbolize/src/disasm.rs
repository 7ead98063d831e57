//! The machine code of functions, decoded for annotated views (metrics
//! per instruction, as in the Oracle Solaris Studio Performance Analyzer
//! manual; `perf annotate`).
//!
//! [`function_code`] takes file offsets where instructions ran (sample
//! leaves, branch ends), finds the function symbol around each (the same
//! symbol table [`crate::symbolize`] names frames from), reads the
//! function's bytes from the binary and decodes them with iced-x86 into
//! AT&T syntax, the way `objdump -d` (and so `perf annotate`) prints it:
//! hexadecimal immediates and displacements, `%rip`-relative operands as
//! written, branch targets as `ADDRESS <function+0xOFF>`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter, Instruction, OpKind};
use object::{Architecture, Object};

use crate::demangle::NameCache;
use crate::elf::LoadSegments;
use crate::find::{self, Config};
use crate::request::{ModuleRequest, Status};

/// Functions larger than this are not decoded (a symbol whose size is
/// wrong, or data in a text section).
const MAX_FUNCTION: u64 = 1 << 20;

pub use crate::facts::{FunctionCode, Insn};

/// What [`function_code`] found for one module.
#[derive(Clone, Debug)]
pub struct CodeResult {
    pub status: Status,
    pub binary: Option<PathBuf>,
    pub message: Option<String>,
    pub functions: Vec<FunctionCode>,
}

impl CodeResult {
    fn failed(status: Status, message: String) -> CodeResult {
        CodeResult {
            status,
            binary: None,
            message: Some(message),
            functions: Vec::new(),
        }
    }
}

/// The functions of `r.path` containing `r.addresses` (file offsets), each
/// once, decoded. x86 (32- and 64-bit) only; other machines get
/// `Status::Error` with a message.
pub fn function_code(cfg: &Config, r: &ModuleRequest) -> CodeResult {
    let mut functions = Vec::new();
    let mut res = function_code_each(cfg, r, |f| functions.push(f));
    res.functions = functions;
    res
}

/// [`function_code`] handing each function to `each` as it is decoded, in
/// address order (the result's `functions` is empty): a module such as
/// libLLVM has millions of sampled instructions, which need not be held
/// together.
///
/// With a symbol store (`cfg.store`), a function is decoded once per
/// module (build-id, or path, size and modification time): the code is
/// kept in the store and later calls take it from there. A module whose
/// symbols are known to the store and whose functions asked for are all
/// kept there is not opened at all.
pub fn function_code_each(
    cfg: &Config,
    r: &ModuleRequest,
    mut each: impl FnMut(FunctionCode),
) -> CodeResult {
    let key = crate::find::facts_key(cfg, r);
    let store = key.as_deref().zip(cfg.store.as_ref());
    let mut cached: BTreeMap<u64, FunctionCode> = BTreeMap::new();
    // Whether the store was asked already (from the facts' starts).
    let mut asked = false;
    if let Some((k, st)) = store {
        // The functions' starts from what is known of the module (the
        // memo's lock is not held while the code is handed on: `each` may
        // symbolize the same module).
        let known = {
            let slot = cfg.memo().slot(k, cfg.store.as_ref());
            let held = slot.lock().unwrap_or_else(|e| e.into_inner());
            held.as_ref().map(|f| {
                let starts: Vec<u64> =
                    function_starts(&f.base.symbols, &f.base.segments, &r.addresses)
                        .into_keys()
                        .collect();
                (starts, f.base.binary.clone())
            })
        };
        if let Some((starts, binary)) = known {
            asked = true;
            cached = st
                .load_code(k, &starts)
                .into_iter()
                .map(|f| (f.address, f))
                .collect();
            if starts.iter().all(|s| cached.contains_key(s)) {
                for (_, f) in cached {
                    each(f);
                }
                return CodeResult {
                    status: Status::Ok,
                    binary,
                    message: None,
                    functions: Vec::new(),
                };
            }
        }
    }
    cfg.memo()
        .opened
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let found = match find::locate(cfg, &r.path, r.build_id.as_deref()) {
        Ok(f) => f,
        Err((status, msg)) => return CodeResult::failed(status, msg),
    };
    let data: &[u8] = &found.binary.data;
    let obj = match object::File::parse(data) {
        Ok(o) => o,
        Err(e) => {
            return CodeResult::failed(
                Status::Error,
                format!("{}: {e}", found.binary.path.display()),
            )
        }
    };
    let bitness = match obj.architecture() {
        Architecture::X86_64 => 64,
        Architecture::X86_64_X32 | Architecture::I386 => 32,
        a => {
            return CodeResult::failed(
                Status::Error,
                format!("{}: no disassembler for {a:?}", found.binary.path.display()),
            )
        }
    };
    let Some((map, _, _)) = crate::elf::choose_symbols(&found, &obj) else {
        return CodeResult {
            status: Status::NoSymbols,
            binary: Some(found.binary.path.clone()),
            message: Some("no function symbols".into()),
            functions: Vec::new(),
        };
    };
    let segs = LoadSegments::from_data(data).unwrap_or_default();
    let to_offset = |va: u64| {
        if segs.is_empty() {
            Some(va)
        } else {
            segs.vaddr_to_offset(va)
        }
    };
    let starts = function_starts(&map, &segs, &r.addresses);
    if let (Some((k, st)), false) = (store, asked) {
        let s: Vec<u64> = starts.keys().copied().collect();
        cached = st
            .load_code(k, &s)
            .into_iter()
            .map(|f| (f.address, f))
            .collect();
    }
    // Functions decoded now, saved to the store a chunk at a time.
    let mut fresh: Vec<FunctionCode> = Vec::new();
    let mut fresh_insns = 0usize;
    let mut names = NameCache::default();
    let mut fmt = formatter("0x");
    let mut fmt_branch = formatter("");
    for (start, (end, raw)) in starts {
        if let Some(f) = cached.remove(&start) {
            each(f);
            continue;
        }
        let Some(off) = to_offset(start) else {
            continue;
        };
        let Some(bytes) = usize::try_from(off)
            .ok()
            .and_then(|o| data.get(o..o.checked_add((end - start) as usize)?))
        else {
            continue;
        };
        let name = names.demangle(&raw);
        let mut dec = Decoder::with_ip(bitness, bytes, start, DecoderOptions::NONE);
        let mut insns = Vec::new();
        let mut ins = Instruction::default();
        while dec.can_decode() {
            let at = dec.position();
            dec.decode_out(&mut ins);
            let len = ins.len();
            let mut text = String::new();
            let target = branch_target(&ins);
            match target {
                Some(_) => fmt_branch.format(&ins, &mut text),
                None => fmt.format(&ins, &mut text),
            }
            if let Some(t) = target {
                if let Some(s) = map.find(t) {
                    {
                        let n = if s.start == start {
                            name.clone()
                        } else {
                            names.demangle(&s.name)
                        };
                        if t == s.start {
                            text.push_str(&format!(" <{n}>"));
                        } else {
                            text.push_str(&format!(" <{n}+{:#x}>", t - s.start));
                        }
                    }
                }
            }
            insns.push(Insn {
                offset: off + at as u64,
                address: ins.ip(),
                bytes: bytes[at..at + len].to_vec(),
                text,
            });
        }
        let f = FunctionCode {
            name,
            offset: off,
            address: start,
            insns,
        };
        if let Some((k, st)) = store {
            fresh_insns += f.insns.len();
            fresh.push(f.clone());
            if fresh_insns >= SAVE_CHUNK {
                st.save_code(k, &fresh);
                fresh.clear();
                fresh_insns = 0;
            }
        }
        each(f);
    }
    if let (Some((k, st)), false) = (store, fresh.is_empty()) {
        st.save_code(k, &fresh);
    }
    CodeResult {
        status: Status::Ok,
        binary: Some(found.binary.path.clone()),
        message: None,
        functions: Vec::new(),
    }
}

/// Decoded instructions saved to the store per part, at most (about).
const SAVE_CHUNK: usize = 1 << 17;

/// The functions containing the file offsets `addresses`, each once: start
/// address -> (end address, name as in the file). Functions of no size or
/// larger than [`MAX_FUNCTION`] are left out.
fn function_starts(
    map: &crate::elf::SymbolMap,
    segs: &LoadSegments,
    addresses: &[u64],
) -> BTreeMap<u64, (u64, String)> {
    let to_vaddr = |off: u64| {
        if segs.is_empty() {
            Some(off)
        } else {
            segs.offset_to_vaddr(off)
        }
    };
    let mut starts = BTreeMap::new();
    for &off in addresses {
        if let Some(s) = to_vaddr(off).and_then(|va| map.find(va)) {
            if s.end > s.start && s.end - s.start <= MAX_FUNCTION {
                starts.entry(s.start).or_insert((s.end, s.name.clone()));
            }
        }
    }
    starts
}

/// objdump's AT&T style: mnemonic padded to 7 columns, hexadecimal
/// numbers, `%rip`-relative displacements as written. `prefix`: `0x`, or
/// none for branch instructions (objdump prints their targets bare).
fn formatter(prefix: &'static str) -> GasFormatter {
    let mut f = GasFormatter::new();
    let o = f.options_mut();
    o.set_first_operand_char_index(7);
    o.set_small_hex_numbers_in_decimal(false);
    o.set_rip_relative_addresses(true);
    o.set_branch_leading_zeros(false);
    o.set_leading_zeros(false);
    o.set_hex_prefix(prefix);
    o.set_hex_suffix("");
    o.set_uppercase_hex(false);
    f
}

/// The target of a direct branch or call.
fn branch_target(ins: &Instruction) -> Option<u64> {
    (0..ins.op_count()).find_map(|i| match ins.op_kind(i) {
        OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64 => {
            Some(ins.near_branch_target())
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8], ip: u64) -> String {
        let mut d = Decoder::with_ip(64, bytes, ip, DecoderOptions::NONE);
        let ins = d.decode();
        let mut s = String::new();
        formatter(if branch_target(&ins).is_some() {
            ""
        } else {
            "0x"
        })
        .format(&ins, &mut s);
        s
    }

    /// Expected texts: `objdump -d fixtures/perf/bin/hot` at spin_a.
    #[test]
    fn formats_like_objdump() {
        assert_eq!(text(&[0x48, 0x85, 0xff], 0x117c), "test   %rdi,%rdi");
        assert_eq!(text(&[0xba, 0, 0, 0, 0], 0x1181), "mov    $0x0,%edx");
        assert_eq!(
            text(
                &[0x48, 0xbe, 0x2d, 0x7f, 0x95, 0x4c, 0x2d, 0xf4, 0x51, 0x58],
                0x118b
            ),
            "movabs $0x5851f42d4c957f2d,%rsi"
        );
        assert_eq!(
            text(&[0x48, 0x8b, 0x15, 0x2a, 0x67, 0x03, 0x00], 0x11af),
            "mov    0x3672a(%rip),%rdx"
        );
        assert_eq!(text(&[0x75, 0xf0], 0x11ad), "jne    119f");
        assert_eq!(text(&[0xc3], 0x11c0), "ret");
    }
}
