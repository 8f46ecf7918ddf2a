//! The `raknet-dissect` binary: the command line (`cli`) over the library.
//! It owns what a person sees besides the records: the parsing of the
//! arguments, standard error, exit codes.

// The library's layers, named `crate::LAYER` in the command line as in the
// library itself.
#[doc(no_inline)]
use raknet_dissect::*;

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
