//! The sandbox supervisor binary; all of it lives in the `sandboxd` crate.
fn main() {
    sandboxd::main()
}
