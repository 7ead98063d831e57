//! Endian-aware reads from byte slices that never panic: every read checks
//! bounds and returns `None` past the end.

#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
    pub be: bool,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8], be: bool) -> Self {
        Cursor { buf, pos: 0, be }
    }
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    #[inline]
    pub fn skip(&mut self, n: usize) -> Option<()> {
        self.bytes(n).map(|_| ())
    }
    #[inline]
    pub fn u64(&mut self) -> Option<u64> {
        let b: [u8; 8] = self.bytes(8)?.try_into().ok()?;
        Some(if self.be {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        })
    }
    #[inline]
    pub fn u32(&mut self) -> Option<u32> {
        let b: [u8; 4] = self.bytes(4)?.try_into().ok()?;
        Some(if self.be {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }
    #[inline]
    pub fn i32(&mut self) -> Option<i32> {
        self.u32().map(|v| v as i32)
    }
    #[inline]
    pub fn u16(&mut self) -> Option<u16> {
        let b: [u8; 2] = self.bytes(2)?.try_into().ok()?;
        Some(if self.be {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    }
    #[inline]
    pub fn u8(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }
    /// A NUL-terminated string filling at most the rest of the buffer; the
    /// terminator and padding are consumed. Returns the bytes before the NUL.
    pub fn cstr_rest(&mut self) -> &'a [u8] {
        let rest = &self.buf[self.pos.min(self.buf.len())..];
        self.pos = self.buf.len();
        match rest.iter().position(|&b| b == 0) {
            Some(n) => &rest[..n],
            None => rest,
        }
    }
    /// A perf header string: u32 length (with padding), then the bytes.
    pub fn perf_string(&mut self) -> Option<String> {
        let len = self.u32()? as usize;
        let b = self.bytes(len)?;
        let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        Some(String::from_utf8_lossy(&b[..n]).into_owned())
    }
}

/// A view of `len` u64 values in a byte slice (callchains, register sets).
#[derive(Clone, Copy, Debug)]
pub struct U64s<'a> {
    bytes: &'a [u8],
    be: bool,
}

impl<'a> U64s<'a> {
    pub fn new(bytes: &'a [u8], be: bool) -> Self {
        U64s { bytes, be }
    }
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }
    pub fn is_empty(&self) -> bool {
        self.bytes.len() < 8
    }
    pub fn get(&self, i: usize) -> Option<u64> {
        let b: [u8; 8] = self.bytes.get(i * 8..i * 8 + 8)?.try_into().ok()?;
        Some(if self.be {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        })
    }
    /// The raw bytes (8 per value, in the file's byte order).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = u64> + 'a {
        let be = self.be;
        self.bytes.chunks_exact(8).map(move |c| {
            let b: [u8; 8] = c.try_into().unwrap_or([0; 8]);
            if be {
                u64::from_be_bytes(b)
            } else {
                u64::from_le_bytes(b)
            }
        })
    }
}
