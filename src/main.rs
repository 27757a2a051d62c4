fn main() -> std::process::ExitCode {
    acs::cli::main()
}
