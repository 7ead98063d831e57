//! Events packed for the trip from the reader thread to the converter: the
//! strings of a few thousand events in one buffer and their frames in one
//! vector. The converter then frees two allocations per batch instead of
//! several per event (memory freed on another thread than the one that
//! allocated it contends on the allocator's arena locks).

use super::reader::{Event, StackFrame};

/// A string of the batch: byte range in its text.
#[derive(Clone, Copy, Debug)]
pub struct Str(u32, u32);

/// The frames of one event: range in the batch's frames.
#[derive(Clone, Copy, Debug)]
pub struct Frames(u32, u32);

#[derive(Clone, Debug)]
pub enum Packed {
    Module {
        id: u32,
        path: Str,
    },
    Clock {
        epoch: bool,
    },
    Syscall {
        line: u64,
        resumed_line: Option<u64>,
        pid: Option<i32>,
        time_ns: Option<i64>,
        duration_ns: Option<i64>,
        name: Str,
        args: Str,
        ret: Option<Str>,
        errno: Option<Str>,
        note: Option<Str>,
        finished: bool,
        stack: Frames,
    },
    Signal {
        line: u64,
        pid: Option<i32>,
        time_ns: Option<i64>,
        name: Str,
        info: Str,
        stack: Frames,
    },
    Exit {
        line: u64,
        pid: Option<i32>,
        time_ns: Option<i64>,
        code: Option<i32>,
        signal: Option<Str>,
        core_dumped: bool,
    },
}

#[derive(Default)]
pub struct Batch {
    text: String,
    frames: Vec<StackFrame>,
    pub items: Vec<Packed>,
}

/// Events per batch, and bytes of text after which a batch is full.
const ITEMS: usize = 4096;
const TEXT: usize = 4 << 20;

impl Batch {
    pub fn new() -> Self {
        Batch {
            text: String::with_capacity(256 * 1024),
            frames: Vec::with_capacity(ITEMS * 8),
            items: Vec::with_capacity(ITEMS),
        }
    }

    pub fn is_full(&self) -> bool {
        self.items.len() >= ITEMS || self.text.len() >= TEXT
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    fn s(&mut self, v: &str) -> Str {
        let start = self.text.len() as u32;
        self.text.push_str(v);
        Str(start, self.text.len() as u32)
    }

    fn f(&mut self, v: &[StackFrame]) -> Frames {
        let start = self.frames.len() as u32;
        self.frames.extend_from_slice(v);
        Frames(start, self.frames.len() as u32)
    }

    pub fn push(&mut self, ev: Event) {
        let p = match ev {
            Event::Module { id, path } => Packed::Module {
                id,
                path: self.s(&path),
            },
            Event::Clock { epoch } => Packed::Clock { epoch },
            Event::Syscall(c) => Packed::Syscall {
                line: c.line,
                resumed_line: c.resumed_line,
                pid: c.pid,
                time_ns: c.time_ns,
                duration_ns: c.duration_ns,
                name: self.s(&c.name),
                args: self.s(&c.args),
                ret: c.ret.as_deref().map(|v| self.s(v)),
                errno: c.errno.as_deref().map(|v| self.s(v)),
                note: c.ret_note.as_deref().map(|v| self.s(v)),
                finished: c.finished,
                stack: self.f(&c.stack),
            },
            Event::Signal {
                line,
                pid,
                time_ns,
                name,
                info,
                stack,
            } => Packed::Signal {
                line,
                pid,
                time_ns,
                name: self.s(&name),
                info: self.s(&info),
                stack: self.f(&stack),
            },
            Event::Exit {
                line,
                pid,
                time_ns,
                code,
                signal,
                core_dumped,
            } => Packed::Exit {
                line,
                pid,
                time_ns,
                code,
                signal: signal.as_deref().map(|v| self.s(v)),
                core_dumped,
            },
        };
        self.items.push(p);
    }

    pub fn str(&self, s: Str) -> &str {
        self.text.get(s.0 as usize..s.1 as usize).unwrap_or("")
    }

    pub fn frames(&self, f: Frames) -> &[StackFrame] {
        self.frames.get(f.0 as usize..f.1 as usize).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strace::reader::SyscallEvent;

    #[test]
    fn packed_events_read_back() {
        let mut b = Batch::new();
        b.push(Event::Module {
            id: 0,
            path: "/lib/libc.so.6".into(),
        });
        b.push(Event::Syscall(SyscallEvent {
            line: 3,
            resumed_line: Some(5),
            pid: Some(7),
            time_ns: Some(1),
            duration_ns: None,
            name: "write".into(),
            args: "1, \"hi\", 2".into(),
            ret: Some("2".into()),
            errno: None,
            ret_note: None,
            finished: true,
            stack: vec![StackFrame {
                module: 0,
                offset: 0x10,
            }],
        }));
        match &b.items[..] {
            [Packed::Module { path, .. }, Packed::Syscall {
                name,
                args,
                ret,
                errno,
                stack,
                ..
            }] => {
                assert_eq!(b.str(*path), "/lib/libc.so.6");
                assert_eq!((b.str(*name), b.str(*args)), ("write", "1, \"hi\", 2"));
                assert_eq!(ret.map(|r| b.str(r)), Some("2"));
                assert!(errno.is_none());
                assert_eq!(b.frames(*stack)[0].offset, 0x10);
            }
            other => panic!("{other:?}"),
        }
    }
}
