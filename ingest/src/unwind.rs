//! The seam for DWARF stack unwinding of `--call-graph dwarf` samples.
//!
//! Unwinding needs the unwind tables (`.eh_frame`) of the mapped files,
//! which this crate never opens; the caller supplies a [`StackUnwinder`]
//! (the CLI's is built on framehop in trawl-symbolize). The converter hands
//! it the process's executable mappings, the user registers and the stack
//! bytes perf copied, and appends the frames it returns to the sample's
//! stack as user frames.

/// An executable mapping of the sampled process.
#[derive(Clone, Debug)]
pub struct UserMapping {
    pub start: u64,
    pub end: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    pub path: String,
    pub build_id: Option<String>,
}

/// The registers unwinding starts from (x86-64).
#[derive(Clone, Copy, Debug)]
pub struct UserRegs {
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
}

pub trait StackUnwinder: Send {
    /// Unwinds one sample. `space` identifies the process's address space
    /// (pid and a generation that changes whenever its mappings do), so
    /// per-process state can be cached; `maps` lists the mappings and is
    /// called only when needed. `stack` holds the bytes from `regs.sp`
    /// upwards. Pushes the frames onto `out`, innermost first: the
    /// sampled ip, then return addresses.
    fn unwind(
        &mut self,
        space: (i32, u64),
        maps: &mut dyn FnMut() -> Vec<UserMapping>,
        regs: UserRegs,
        stack: &[u8],
        out: &mut Vec<u64>,
    );
}

/// perf's x86-64 register numbers (arch/x86/include/uapi/asm/perf_regs.h).
const X86_BP: u32 = 6;
const X86_SP: u32 = 7;
const X86_IP: u32 = 8;
/// PERF_SAMPLE_REGS_ABI_64.
const ABI_64: u64 = 2;

/// BP, SP and IP from a sample's user registers (values in mask-bit
/// order), when it has all three and the 64-bit ABI.
pub fn x86_64_regs(abi: u64, mask: u64, values: impl Iterator<Item = u64>) -> Option<UserRegs> {
    if abi != ABI_64 {
        return None;
    }
    let (mut ip, mut sp, mut bp) = (None, None, None);
    let mut bits = mask;
    for v in values {
        if bits == 0 {
            break;
        }
        let b = bits.trailing_zeros();
        bits &= bits - 1;
        match b {
            X86_BP => bp = Some(v),
            X86_SP => sp = Some(v),
            X86_IP => ip = Some(v),
            _ => {}
        }
    }
    Some(UserRegs {
        ip: ip?,
        sp: sp?,
        bp: bp?,
    })
}
