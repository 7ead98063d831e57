//! The `syscall` table, shared by the converters that produce system calls:
//! strace dumps and perf.data syscall tracepoints. Both hand over one
//! [`SyscallRow`] per call; the typed argument columns are parsed here
//! from the argument text (strace's, or the register values perf recorded,
//! rendered the way `strace -X raw` prints them).

use arrow::array::{
    BooleanBuilder, Int32Builder, Int64Builder, StringBuilder, StringDictionaryBuilder,
    UInt64Builder,
};
use arrow::datatypes::Int32Type;

use crate::columns::{TableColumns, UtcTime};
use crate::error::Result;
use crate::syscall_args::parse_call_args;
use crate::writer::{CaptureWriter, TableWriter};
use trawl_capture::schema;

const BATCH_ROWS: usize = 64 * 1024;

type Dict = StringDictionaryBuilder<Int32Type>;

/// One system call, as a converter knows it.
#[derive(Clone, Debug, Default)]
pub struct SyscallRow<'a> {
    pub source_id: i32,
    pub line: Option<u64>,
    pub resumed_line: Option<u64>,
    pub pid: Option<i32>,
    pub tgid: Option<i32>,
    pub sample_id: Option<i64>,
    pub time_ns: Option<i64>,
    pub duration_ns: Option<i64>,
    pub name: &'a str,
    pub args: &'a str,
    pub ret: Option<&'a str>,
    pub retval: Option<i64>,
    pub errno: Option<&'a str>,
    pub note: Option<&'a str>,
    pub finished: bool,
    pub stack_id: Option<i64>,
}

table_columns! {
    #[derive(Default)]
    struct Cols for schema::SYSCALL {
        syscall_id: Int64Builder,
        source_id: Int32Builder,
        line: Int64Builder,
        resumed_line: Int64Builder,
        pid: Int32Builder,
        tgid: Int32Builder,
        sample_id: Int64Builder,
        time_ns: Int64Builder,
        time_utc: UtcTime,
        duration_ns: Int64Builder,
        name: Dict,
        args: StringBuilder,
        ret: StringBuilder,
        retval: Int64Builder,
        errno: Dict,
        ret_note: StringBuilder,
        finished: BooleanBuilder,
        stack_id: Int64Builder,
        fd: Int32Builder,
        fd_path: StringBuilder,
        addr: UInt64Builder,
        length: UInt64Builder,
        new_length: UInt64Builder,
        new_addr: UInt64Builder,
        prot: StringBuilder,
        flags: StringBuilder,
        offset: Int64Builder,
        count: Int64Builder,
    }
}

/// Writer of the `syscall` table.
pub struct SyscallTable {
    cols: Cols,
    out: TableWriter,
    next_id: i64,
    pub written: u64,
    /// Per input (`source_id`): the offset from its clock to UTC, once known.
    utc_offsets: Vec<Option<i64>>,
}

impl SyscallTable {
    pub fn new(cap: &mut CaptureWriter) -> Result<Self> {
        Ok(SyscallTable {
            cols: Default::default(),
            out: cap.open_table(&schema::SYSCALL)?,
            next_id: 0,
            written: 0,
            utc_offsets: Vec::new(),
        })
    }

    /// Places an input's clock on UTC (`None`: it cannot be): the calls
    /// pushed from now on get their `time_utc`.
    pub fn set_utc_offset(&mut self, source_id: i32, off: Option<i64>) {
        let Ok(i) = usize::try_from(source_id) else {
            return;
        };
        if self.utc_offsets.len() <= i {
            self.utc_offsets.resize(i + 1, None);
        }
        self.utc_offsets[i] = off;
    }

    /// Adds a call; returns its `syscall_id`.
    pub fn push(&mut self, c: &SyscallRow<'_>) -> i64 {
        let p = parse_call_args(c.name, c.args);
        let k = &mut self.cols;
        let id = self.next_id;
        self.next_id += 1;
        k.syscall_id.append_value(id);
        k.source_id.append_value(c.source_id);
        k.line.append_option(c.line.map(|l| l as i64));
        k.resumed_line
            .append_option(c.resumed_line.map(|l| l as i64));
        k.pid.append_option(c.pid);
        k.tgid.append_option(c.tgid);
        k.sample_id.append_option(c.sample_id);
        k.time_ns.append_option(c.time_ns);
        let off = usize::try_from(c.source_id)
            .ok()
            .and_then(|i| self.utc_offsets.get(i).copied().flatten());
        k.time_utc
            .push(c.time_ns.zip(off).and_then(|(t, o)| t.checked_add(o)));
        k.duration_ns.append_option(c.duration_ns);
        k.name.append_value(c.name);
        k.args.append_value(c.args);
        k.ret.append_option(c.ret);
        k.retval.append_option(c.retval);
        k.errno.append_option(c.errno);
        k.ret_note.append_option(c.note);
        k.finished.append_value(c.finished);
        k.stack_id.append_option(c.stack_id);
        k.fd.append_option(p.fd);
        k.fd_path.append_option(p.fd_path);
        k.addr.append_option(p.addr);
        k.length.append_option(p.length);
        k.new_length.append_option(p.new_length);
        k.new_addr.append_option(p.new_addr);
        k.prot.append_option(p.prot);
        k.flags.append_option(p.flags);
        k.offset.append_option(p.offset);
        k.count.append_option(p.count);
        self.written += 1;
        id
    }

    /// Rows are buffered up to a batch; true when a batch is full (the
    /// caller flushes its stack tables, then this).
    pub fn full(&self) -> bool {
        self.cols.rows() >= BATCH_ROWS
    }

    /// Writes the buffered rows. Flush the stack tables first: a reader of
    /// a partial capture never sees a stack id before its frames.
    pub fn flush(&mut self) -> Result<()> {
        if self.cols.rows() == 0 {
            return Ok(());
        }
        self.out.write_rows(&mut self.cols)?;
        Ok(())
    }

    pub fn finish(mut self, cap: &mut CaptureWriter) -> Result<()> {
        self.flush()?;
        cap.close_table(self.out)?;
        Ok(())
    }
}

/// Linux error names by number (`include/uapi/asm-generic/errno-base.h`
/// and `errno.h`: x86, arm, arm64, riscv, powerpc, s390; not alpha, mips,
/// parisc or sparc).
const ERRNO: [&str; 134] = [
    "",
    "EPERM",
    "ENOENT",
    "ESRCH",
    "EINTR",
    "EIO",
    "ENXIO",
    "E2BIG",
    "ENOEXEC",
    "EBADF",
    "ECHILD",
    "EAGAIN",
    "ENOMEM",
    "EACCES",
    "EFAULT",
    "ENOTBLK",
    "EBUSY",
    "EEXIST",
    "EXDEV",
    "ENODEV",
    "ENOTDIR",
    "EISDIR",
    "EINVAL",
    "ENFILE",
    "EMFILE",
    "ENOTTY",
    "ETXTBSY",
    "EFBIG",
    "ENOSPC",
    "ESPIPE",
    "EROFS",
    "EMLINK",
    "EPIPE",
    "EDOM",
    "ERANGE",
    "EDEADLK",
    "ENAMETOOLONG",
    "ENOLCK",
    "ENOSYS",
    "ENOTEMPTY",
    "ELOOP",
    "",
    "ENOMSG",
    "EIDRM",
    "ECHRNG",
    "EL2NSYNC",
    "EL3HLT",
    "EL3RST",
    "ELNRNG",
    "EUNATCH",
    "ENOCSI",
    "EL2HLT",
    "EBADE",
    "EBADR",
    "EXFULL",
    "ENOANO",
    "EBADRQC",
    "EBADSLT",
    "",
    "EBFONT",
    "ENOSTR",
    "ENODATA",
    "ETIME",
    "ENOSR",
    "ENONET",
    "ENOPKG",
    "EREMOTE",
    "ENOLINK",
    "EADV",
    "ESRMNT",
    "ECOMM",
    "EPROTO",
    "EMULTIHOP",
    "EDOTDOT",
    "EBADMSG",
    "EOVERFLOW",
    "ENOTUNIQ",
    "EBADFD",
    "EREMCHG",
    "ELIBACC",
    "ELIBBAD",
    "ELIBSCN",
    "ELIBMAX",
    "ELIBEXEC",
    "EILSEQ",
    "ERESTART",
    "ESTRPIPE",
    "EUSERS",
    "ENOTSOCK",
    "EDESTADDRREQ",
    "EMSGSIZE",
    "EPROTOTYPE",
    "ENOPROTOOPT",
    "EPROTONOSUPPORT",
    "ESOCKTNOSUPPORT",
    "EOPNOTSUPP",
    "EPFNOSUPPORT",
    "EAFNOSUPPORT",
    "EADDRINUSE",
    "EADDRNOTAVAIL",
    "ENETDOWN",
    "ENETUNREACH",
    "ENETRESET",
    "ECONNABORTED",
    "ECONNRESET",
    "ENOBUFS",
    "EISCONN",
    "ENOTCONN",
    "ESHUTDOWN",
    "ETOOMANYREFS",
    "ETIMEDOUT",
    "ECONNREFUSED",
    "EHOSTDOWN",
    "EHOSTUNREACH",
    "EALREADY",
    "EINPROGRESS",
    "ESTALE",
    "EUCLEAN",
    "ENOTNAM",
    "ENAVAIL",
    "EISNAM",
    "EREMOTEIO",
    "EDQUOT",
    "ENOMEDIUM",
    "EMEDIUMTYPE",
    "ECANCELED",
    "ENOKEY",
    "EKEYEXPIRED",
    "EKEYREVOKED",
    "EKEYREJECTED",
    "EOWNERDEAD",
    "ENOTRECOVERABLE",
    "ERFKILL",
    "EHWPOISON",
];

/// The name of error number `n` (`ENOMEM`), or `E<n>` for one without a
/// name; kernel-internal numbers (512..) by their kernel names.
pub fn errno_name(n: i64) -> std::borrow::Cow<'static, str> {
    let known = usize::try_from(n)
        .ok()
        .and_then(|i| ERRNO.get(i))
        .filter(|s| !s.is_empty());
    match (known, n) {
        (Some(s), _) => (*s).into(),
        (None, 512) => "ERESTARTSYS".into(),
        (None, 513) => "ERESTARTNOINTR".into(),
        (None, 514) => "ERESTARTNOHAND".into(),
        (None, 516) => "ERESTART_RESTARTBLOCK".into(),
        (None, n) => format!("E{n}").into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_names_match_the_kernel_headers() {
        // Spot values from include/uapi/asm-generic/errno{-base,}.h.
        assert_eq!(errno_name(2), "ENOENT");
        assert_eq!(errno_name(12), "ENOMEM");
        assert_eq!(errno_name(40), "ELOOP");
        assert_eq!(errno_name(42), "ENOMSG");
        assert_eq!(errno_name(61), "ENODATA");
        assert_eq!(errno_name(95), "EOPNOTSUPP");
        assert_eq!(errno_name(110), "ETIMEDOUT");
        assert_eq!(errno_name(133), "EHWPOISON");
        assert_eq!(errno_name(512), "ERESTARTSYS");
        assert_eq!(errno_name(41), "E41");
        assert_eq!(errno_name(4000), "E4000");
    }
}
