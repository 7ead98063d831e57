include!("../cli/link.rs");

fn main() {
    println!("cargo:rerun-if-changed=../cli/link.rs");
    link_args("cdylib");
}
