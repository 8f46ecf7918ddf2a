//! The `raknet-dissect` binary: the command line (`cli`) over the library.
//! It owns what a person sees besides the records: the parsing of the
//! arguments, standard error, exit codes; and the allocator, mimalloc
//! (what it buys: docs/performance.md).

// The library's layers, named `crate::LAYER` here as in the library itself.
#[doc(no_inline)]
use raknet_dissect::*;

mod cli;
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
fn main() -> std::process::ExitCode {
    cli::main()
}
