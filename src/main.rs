fn main() -> std::process::ExitCode {
    raknet_dissect::cli::main()
}
