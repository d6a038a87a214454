//! The simdex command-line tool.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod demo;

/// simdex: a storage engine for simhash fingerprints.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate random fingerprints, build a table, query it and print its size.
    Demo(demo::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(a) => demo::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("simdex: error: {e}");
            ExitCode::FAILURE
        }
    }
}
