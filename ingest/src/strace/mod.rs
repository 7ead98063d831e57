//! strace output (`strace -f -ttt -T -k -y ...`): lines → system calls,
//! signals and exits with their `-k` stacks.

pub mod lines;
pub mod reader;
