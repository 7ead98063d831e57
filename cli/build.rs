include!("link.rs");

fn main() {
    println!("cargo:rerun-if-changed=link.rs");
    link_args("bins");
}
