#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| trawl_fuzz::kallsyms(data));
