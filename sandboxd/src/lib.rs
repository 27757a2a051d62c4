//! sandboxd: the supervisor inside every sandbox (see README in this crate).

pub fn main() {
    eprintln!("sandboxd: not built yet");
    std::process::exit(2);
}
