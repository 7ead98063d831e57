//! A small perf.data writer for tests and simulators (filled in below).
