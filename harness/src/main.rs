use clap::Parser;
use faultline::cli::{dispatch, Cli};
use faultline::error::exit_code;
use std::io::IsTerminal;

fn main() {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FAULTLINE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error")),
        )
        .with_writer(std::io::stderr)
        // Colour codes only where a person reads them, never in a log file.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    // Descendants that detach from their process group come back to us when orphaned,
    // and die at the end (see `faultline::children`).
    if let Err(e) = faultline::children::adopt_orphans() {
        tracing::warn!("cannot adopt orphaned descendants: {e}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("faultline: error: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let hint = cli.command.interrupted_hint();
    let result = runtime.block_on(async {
        match hint {
            Some(hint) => tokio::select! {
                r = dispatch(cli) => r,
                signal = faultline::signals::terminated() => Err(anyhow::anyhow!(
                    "interrupted by {signal}; {hint}"
                )),
            },
            None => dispatch(cli).await,
        }
    });
    // Dropping the runtime drops the browser handles, which kill Chromium.
    drop(runtime);
    let left = faultline::children::sweep();
    if left > 0 {
        tracing::warn!("killed {left} process(es) the browsers or plugins left behind");
    }
    if let Err(e) = result {
        // `faultline list faults | head` closing the pipe early is not an error.
        let broken_pipe = e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        });
        if broken_pipe {
            std::process::exit(0);
        }
        eprintln!("faultline: error: {e:#}");
        std::process::exit(exit_code(&e));
    }
}
