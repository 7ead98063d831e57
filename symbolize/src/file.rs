//! Files opened safely: regular files only, paths resolved inside a root
//! as if it were `/` (a capture's recorded paths are untrusted), read with
//! a limit, memory-mapped; and the files found for a module.

use std::path::{Path, PathBuf};

use object::Object;

/// The bytes of a file: memory-mapped, or copied (the running vdso).
pub enum Bytes {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// A mapped file.
pub struct Loaded {
    /// Where it is (for a file opened in a root: the root joined with the
    /// path inside it).
    pub path: PathBuf,
    /// Opened inside a root: (root, path in it).
    pub(crate) at: Option<(PathBuf, PathBuf)>,
    pub data: Bytes,
}

/// A place to look for a file: a path, or a path inside a root resolved
/// as if the root were `/` (see [`open_in_root`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cand {
    Path(PathBuf),
    InRoot { root: PathBuf, rel: PathBuf },
}

impl Cand {
    pub(crate) fn in_root(root: &Path, rel: impl AsRef<Path>) -> Cand {
        Cand::InRoot {
            root: root.to_path_buf(),
            rel: rel.as_ref().to_path_buf(),
        }
    }

    /// The path as shown in messages.
    pub fn display_path(&self) -> PathBuf {
        match self {
            Cand::Path(p) => p.clone(),
            Cand::InRoot { root, rel } => root.join(rel),
        }
    }

    /// Opens the file if it is a regular one ([`open_regular`],
    /// [`open_in_root`]).
    pub fn open(&self) -> std::io::Result<std::fs::File> {
        match self {
            Cand::Path(p) => open_regular(p),
            Cand::InRoot { root, rel } => open_in_root(root, rel),
        }
    }

    /// Reads the regular file, at most `limit` bytes.
    pub fn read(&self, limit: u64) -> std::io::Result<Vec<u8>> {
        read_limited(self.open()?, &self.display_path(), limit)
    }
}

/// Opens `path` for reading only if it is a regular file. Captures name
/// the files to symbolize, and they are untrusted: a FIFO would block
/// `open` (so it is opened non-blocking and checked after), a device
/// (`/dev/zero`, `/dev/tty`) or socket would read without end. The check
/// is on the opened file, not the name, so a path swapped between a check
/// and the open cannot slip through.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    if !f.metadata()?.file_type().is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{}: not a regular file", path.display()),
        ));
    }
    Ok(f)
}

/// Opens `rel` inside the directory `root` as if `root` were `/`: `..`
/// and symbolic links (absolute ones too) are resolved within it and cannot
/// leave it (Linux's `openat2(RESOLVE_IN_ROOT)`; a sysroot's
/// `lib/libc.so.6 -> /lib/x86_64-linux-gnu/libc.so.6` is the sysroot's
/// libc, never the host's). Only a regular file is kept ([`open_regular`]).
/// Where `openat2` is missing (Linux < 5.6), the path is refused unless,
/// resolved, it is inside the resolved root.
pub fn open_in_root(root: &Path, rel: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::{AsRawFd, FromRawFd};
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_PATH)
        .open(root)?;
    let rel_c = std::ffi::CString::new(rel.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let how = OpenHow {
        flags: (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: openat2 reads `how` (of the size given) and the NUL-ended
    // path; both outlive the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            rel_c.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    let f = if fd >= 0 {
        // SAFETY: a new descriptor owned by nothing else.
        unsafe { std::fs::File::from_raw_fd(fd as i32) }
    } else {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ENOSYS) {
            return Err(e);
        }
        let whole = root.join(rel.strip_prefix("/").unwrap_or(rel));
        let (r, w) = (std::fs::canonicalize(root)?, std::fs::canonicalize(&whole)?);
        if !w.starts_with(&r) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("{}: resolves outside {}", whole.display(), root.display()),
            ));
        }
        return open_regular(&w);
    };
    if !f.metadata()?.file_type().is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{}: not a regular file", root.join(rel).display()),
        ));
    }
    Ok(f)
}

/// Reads a regular file of at most `limit` bytes ([`open_regular`]).
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    read_limited(open_regular(path)?, path, limit)
}

fn read_limited(f: std::fs::File, path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let len = f.metadata()?.len();
    if len > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{}: {len} bytes, more than the {limit} read",
                path.display()
            ),
        ));
    }
    let mut v = Vec::with_capacity(len as usize);
    f.take(limit).read_to_end(&mut v)?;
    Ok(v)
}

impl Loaded {
    pub(crate) fn open(path: &Path) -> Option<Loaded> {
        Self::open_cand(&Cand::Path(path.to_path_buf()))
    }

    pub(crate) fn open_cand(c: &Cand) -> Option<Loaded> {
        let f = c.open().ok()?;
        // Also refuses /proc files (size 0) and anything too short for an
        // ELF header.
        if f.metadata().ok()?.len() < 64 {
            return None;
        }
        // SAFETY: the file is opened read-only; like every symbolizer we
        // assume it is not truncated while we read it.
        let data = unsafe { memmap2::Mmap::map(&f) }.ok()?;
        if &data[..4] != b"\x7fELF" {
            return None;
        }
        Some(Loaded {
            path: c.display_path(),
            at: match c {
                Cand::InRoot { root, rel } => Some((root.clone(), rel.clone())),
                Cand::Path(_) => None,
            },
            data: Bytes::Map(data),
        })
    }

    /// The vdso of the running kernel, copied from this process's memory
    /// (every process maps the same image). Its path is `[vdso]`.
    pub(crate) fn running_vdso() -> Option<Loaded> {
        use std::io::{Read, Seek, SeekFrom};
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
        let range = line.split_whitespace().next()?;
        let (a, b) = range.split_once('-')?;
        let (a, b) = (
            u64::from_str_radix(a, 16).ok()?,
            u64::from_str_radix(b, 16).ok()?,
        );
        let len = usize::try_from(b.checked_sub(a)?).ok()?;
        if !(64..=1 << 20).contains(&len) {
            return None;
        }
        let mut f = std::fs::File::open("/proc/self/mem").ok()?;
        f.seek(SeekFrom::Start(a)).ok()?;
        let mut data = vec![0u8; len];
        f.read_exact(&mut data).ok()?;
        (&data[..4] == b"\x7fELF").then(|| Loaded {
            path: PathBuf::from("[vdso]"),
            at: None,
            data: Bytes::Owned(data),
        })
    }

    pub fn build_id(&self) -> Option<String> {
        let o = object::File::parse(&*self.data).ok()?;
        o.build_id().ok().flatten().map(hex)
    }

    /// The file holds code: its `.text` (when it has one) has contents in
    /// the file, which a separate debug file's does not (NOBITS).
    pub fn has_code(&self) -> bool {
        object::File::parse(&*self.data).is_ok_and(|o| {
            use object::ObjectSection;
            o.section_by_name(".text")
                .is_none_or(|t| t.kind() != object::SectionKind::UninitializedData)
        })
    }

    /// The file has DWARF line or debug information.
    pub fn has_dwarf(&self) -> bool {
        object::File::parse(&*self.data).is_ok_and(|o| {
            o.section_by_name(".debug_info").is_some()
                || o.section_by_name(".zdebug_info").is_some()
        })
    }

    pub(crate) fn debuglink(&self) -> Option<String> {
        let o = object::File::parse(&*self.data).ok()?;
        let (name, _crc) = o.gnu_debuglink().ok().flatten()?;
        Some(String::from_utf8_lossy(name).into_owned())
    }
}

/// The files found for a module.
pub struct Found {
    pub binary: Loaded,
    pub debug: Vec<Loaded>,
    pub tried: Vec<String>,
}

impl Found {
    pub fn tried_note(&self) -> String {
        if self.tried.is_empty() {
            String::new()
        } else {
            format!(" (debug files tried: {})", self.tried.join(", "))
        }
    }
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
