fn main() -> std::process::ExitCode {
    // Started as a machine's supervisor (the server binds its own executable
    // into machines as `/opt/acs/sandboxd` when no `sandboxd` binary sits
    // beside it, as after `cargo run`): be that supervisor.
    if std::env::args_os().next().is_some_and(|a| std::path::Path::new(&a).ends_with("sandboxd")) {
        sandboxd::main();
        return std::process::ExitCode::SUCCESS;
    }
    acs::cli::main()
}
