//! `tessera-lsp`: the Tessera language server, speaking the Language
//! Server Protocol over standard input and output.

use std::process::ExitCode;

const USAGE: &str = "tessera-lsp: the Tessera language server

Usage: tessera-lsp [--stdio]

Speaks the Language Server Protocol on standard input and output; an
editor starts it (the VS Code extension does). Logs go to standard error.

Options:
  --stdio      use standard input and output (the default and only transport)
  --version    print the version
  --help       print this help";

fn main() -> ExitCode {
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--stdio" => {}
            "--version" | "-V" => {
                println!("tessera-lsp {}", env!("CARGO_PKG_VERSION"));
                return ExitCode::SUCCESS;
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("tessera-lsp: unknown argument `{other}`\n\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(2 * 8)
        .thread_stack_size(tessera_lsp::QUERY_STACK_BYTES)
        .build();
    let result = runtime.and_then(|rt| {
        let served = rt.block_on(tessera_lsp::serve(tokio::io::stdin(), tokio::io::stdout()));
        // The input is read ahead of the server, on a blocking thread that
        // may be waiting on a client that keeps standard input open after
        // `exit`: the process does not wait for it.
        rt.shutdown_background();
        served
    });
    match result {
        Ok(tessera_lsp::Ended::AfterShutdown) => ExitCode::SUCCESS,
        Ok(tessera_lsp::Ended::WithoutShutdown) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("tessera-lsp: {error}");
            ExitCode::FAILURE
        }
    }
}
