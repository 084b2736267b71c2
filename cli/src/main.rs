//! `ratelock`: the command line. Parses the arguments (`args`), runs the command on a tokio runtime,
//! and turns its outcome into the documented exit code (`exit`).

mod args;
mod doctor;
mod exit;
mod forwarded_signals;
mod held_command;
mod inspect;
mod limit;
mod lock_run;
mod output;
mod span;
mod store_url;

use clap::{CommandFactory, Parser};

use args::{Cli, Command, LimitCommand, LockCommand};
use exit::Exit;

fn main() {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let outcome = runtime.block_on(run(cli));
    let code = match outcome {
        Ok(code) => code,
        Err(failure) => {
            output::warning(&failure.to_string());
            failure.code()
        }
    };
    // The runtime's workers may be parked in I/O: leave without waiting for them.
    runtime.shutdown_background();
    std::process::exit(code);
}

async fn run(cli: Cli) -> Result<i32, Exit> {
    match cli.command {
        Command::Lock {
            command: LockCommand::Run(run),
        } => lock_run::run(&cli.store, run).await,
        Command::Limit { command } => {
            let (spend, args) = match command {
                LimitCommand::Hit(args) => (true, args),
                LimitCommand::Peek(args) => (false, args),
            };
            limit::run(&cli.store, args, spend, cli.json).await
        }
        Command::Inspect(args) => inspect::run(&cli.store, args, cli.json).await,
        Command::Doctor(args) => doctor::run(&cli.store, args, cli.json).await,
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "ratelock", &mut std::io::stdout());
            Ok(0)
        }
    }
}
