// `sqlx::migrate!` embeds the migration folders; rebuild when one changes.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
