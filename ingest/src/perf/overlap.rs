//! Branch-stack entries a sample shares with its thread's previous sample
//! (Ono et al. 2014, time-series performance analysis, §4.2 and Fig. 6).
//!
//! The method reads "the branch information accumulated since the previous
//! interrupt". A perf branch stack is not that: it is a snapshot of the
//! last N branches the hardware kept. When fewer than N branches retire
//! between two samples of a thread, the older entries of the second
//! snapshot are the newest entries of the first, in the same order; with no
//! branch in between, the whole stack repeats. Counting them again would
//! give the same branch two pseudo-samples.
//!
//! An entry read twice from the same hardware slot is identical in every
//! field (addresses, flags with the cycle count, counters), so the repeat
//! is found by comparing whole entries: the largest k such that this
//! stack's k oldest entries equal the previous stack's k newest, in order.
//! The comparison is per thread (the kernel clears the LBR when it switches
//! tasks unless it saves it for the task, so another thread's entries never
//! continue this one's), and only forward in time.
//!
//! Limits: a loop that takes the same branch with the same cycle count
//! over and over produces stacks that look repeated whether or not it ran
//! between the samples; the hardware does not say which. Call-stack mode
//! (`--call-graph lbr`, PERF_SAMPLE_BRANCH_CALL_STACK) records the call
//! stack, whose outer frames repeat by design: nothing is marked there.

use std::collections::HashMap;

use super::records::BranchEntry;

/// PERF_SAMPLE_BRANCH_CALL_STACK: the branch stack is the call stack.
const BRANCH_CALL_STACK: u64 = 1 << 11;

/// One entry as compared: from, to, flags (with cycles), counters.
type Key = [u64; 4];

fn key(e: &BranchEntry) -> Key {
    [e.from, e.to, e.flags, e.counters.unwrap_or(0)]
}

/// The number of `cur`'s oldest entries that repeat `prev`'s newest ones
/// in order (both newest first): the largest k with
/// `cur[n - k + i] == prev[i]` for every i < k.
pub fn overlap(prev: &[Key], cur: &[Key]) -> usize {
    let n = cur.len();
    (1..=n.min(prev.len()))
        .rev()
        .find(|&k| cur[n - k..] == prev[..k])
        .unwrap_or(0)
}

struct Last {
    time: Option<u64>,
    entries: Vec<Key>,
}

/// The last branch stack of each thread.
#[derive(Default)]
pub struct BranchHistory {
    last: HashMap<(i32, i32), Last>,
    cur: Vec<Key>,
}

impl BranchHistory {
    /// Records the branch stack `entries` (newest first) of a sample of
    /// thread `(pid, tid)` at `time`, recorded under branch filter
    /// `filter`, and returns how many of its oldest entries the thread's
    /// previous stack already held.
    pub fn repeated(
        &mut self,
        pid: i32,
        tid: i32,
        time: Option<u64>,
        filter: u64,
        entries: impl Iterator<Item = BranchEntry>,
    ) -> usize {
        if filter & BRANCH_CALL_STACK != 0 {
            return 0;
        }
        self.cur.clear();
        self.cur.extend(entries.map(|e| key(&e)));
        let last = self.last.entry((pid, tid)).or_insert(Last {
            time: None,
            entries: Vec::new(),
        });
        let forward = match (last.time, time) {
            (Some(a), Some(b)) => b >= a,
            _ => true,
        };
        let k = if forward {
            overlap(&last.entries, &self.cur)
        } else {
            0
        };
        last.time = time;
        std::mem::swap(&mut last.entries, &mut self.cur);
        k
    }

    /// Forgets a thread (it exited).
    pub fn forget(&mut self, pid: i32, tid: i32) {
        self.last.remove(&(pid, tid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(v: &[u64]) -> Vec<Key> {
        v.iter().map(|&x| [x, x + 1, 2, 0]).collect()
    }

    #[test]
    fn overlap_is_the_longest_repeated_tail() {
        // Newest first. Previous stack 5 4 3 2; two new branches 7 6.
        assert_eq!(overlap(&k(&[5, 4, 3, 2]), &k(&[7, 6, 5, 4])), 2);
        // None repeated.
        assert_eq!(overlap(&k(&[5, 4, 3, 2]), &k(&[9, 8, 7, 6])), 0);
        // No branch in between: the whole stack.
        assert_eq!(overlap(&k(&[5, 4, 3, 2]), &k(&[5, 4, 3, 2])), 4);
        // The previous newest must be the repeated run's start: 4 3 at
        // the tail is not 5 4.
        assert_eq!(overlap(&k(&[5, 4, 3, 2]), &k(&[7, 6, 4, 3])), 0);
        // A shorter previous stack (the first samples after start).
        assert_eq!(overlap(&k(&[5, 4]), &k(&[7, 6, 5, 4])), 2);
        assert_eq!(overlap(&k(&[]), &k(&[7, 6])), 0);
        // Entries differing only in flags (another cycle count) differ.
        let mut cur = k(&[7, 6, 5, 4]);
        cur[3][2] = 2 | 9 << 4;
        assert_eq!(overlap(&k(&[5, 4, 3, 2]), &cur), 0);
    }

    fn entries(v: &[u64]) -> impl Iterator<Item = BranchEntry> + '_ {
        v.iter().map(|&x| BranchEntry {
            from: x,
            to: x + 1,
            flags: 2,
            counters: None,
        })
    }

    #[test]
    fn per_thread_forward_in_time_not_in_call_stack_mode() {
        let mut h = BranchHistory::default();
        assert_eq!(h.repeated(1, 1, Some(10), 0, entries(&[3, 2, 1])), 0);
        // Another thread in between does not break thread 1's history.
        assert_eq!(h.repeated(2, 2, Some(11), 0, entries(&[4, 3, 2])), 0);
        assert_eq!(h.repeated(1, 1, Some(12), 0, entries(&[4, 3, 2])), 2);
        // Back in time: not compared.
        assert_eq!(h.repeated(1, 1, Some(5), 0, entries(&[4, 3, 2])), 0);
        assert_eq!(h.repeated(1, 1, Some(13), 0, entries(&[4, 3, 2])), 3);
        // Call-stack mode.
        assert_eq!(
            h.repeated(1, 1, Some(14), BRANCH_CALL_STACK, entries(&[4, 3, 2])),
            0
        );
        h.forget(1, 1);
        assert_eq!(h.repeated(1, 1, Some(15), 0, entries(&[4, 3, 2])), 0);
    }
}
