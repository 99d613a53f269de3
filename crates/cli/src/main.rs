//! The `kleinrock` command: run a scenario, sweep a grid in parallel, list controllers, run
//! the built-in demo, reproduce a paper, measure the simulator's speed, and run the real QUIC
//! datapath (transfer, serve, send, emulate).

mod alloc;
mod bench;
mod crosscheck;
mod emulate;
mod kernel_run;
mod live;
mod send;
mod serve;
mod shell;
mod transfer;
mod tunnel;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kleinrock_lab::aggregate::sweep_report;
use kleinrock_lab::metrics::Summary;
use kleinrock_lab::report::{replicate_table, run_tables, sweep_table, Table};
use kleinrock_lab::runner::{check_output_dir, run_all, write_outputs, RunOutput};
use kleinrock_lab::scenario::{load, parse, ScenarioSet};
use kleinrock_lab::DEMO_SCENARIO;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Counts allocated bytes (`kleinrock bench` reports memory per flow from it).
#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

#[derive(Parser)]
#[command(
    name = "kleinrock",
    version,
    about = "A congestion-control lab: one library of controllers, a fast deterministic simulator."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Scenario file (TOML).
    file: PathBuf,
    /// Override a field before running, as in a sweep grid: `--set flows.0.cc=cubic`.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Print the summary as JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// Write the results (summary JSON, traces, RTT CDFs) to this directory; an earlier
    /// kleinrock output there is replaced, anything else is refused.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Show no progress and no "wrote DIR" line (progress is shown only when standard error
    /// is a terminal).
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run one scenario and print its summary.
    Run(RunArgs),
    /// Run every point of a scenario's [sweep] grid in parallel, one row per point.
    Sweep(RunArgs),
    /// List the controllers with their parameters and defaults.
    List,
    /// Run the built-in demo: NewReno and Cubic alone on 10 Mbps / 50 ms / 2 BDP, 60 s.
    Demo {
        /// Write the results (summaries, traces) to this directory.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Show no progress and no "wrote DIR" line.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Reproduce a paper's experiments and print our figures beside the paper's.
    Reproduce {
        /// The paper: one of the names `kleinrock reproduce --list` shows.
        #[arg(required_unless_present = "list")]
        paper: Option<String>,
        /// List the reproducible papers.
        #[arg(long)]
        list: bool,
        /// Write report.txt and the data behind each figure (CSV) to this directory.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Show no progress and no "wrote DIR" line.
        #[arg(long, short)]
        quiet: bool,
    },
    /// (Re)build report.html, the self-contained HTML report with plots, in an output
    /// directory of `run`, `sweep`, `demo`, `reproduce`, `transfer` or `tunnel`, without
    /// rerunning.
    Report {
        /// The output directory (what --out wrote).
        dir: PathBuf,
    },
    /// Move bytes with real QUIC through the userspace bottleneck emulator, all on loopback.
    Transfer(transfer::TransferArgs),
    /// Run a scenario's multipath tunnel for real: one QUIC connection per path, each through
    /// its own emulated links, with the simulator's scheduler and reordering at the ends.
    Tunnel(tunnel::TunnelArgs),
    /// Run the QUIC server alone (kleinrock, kleinrock-ts and hq-interop clients).
    Serve(serve::ServeArgs),
    /// Upload to a kleinrock server with a controller on the client side.
    Send(send::SendArgs),
    /// Run the bottleneck emulator alone between a client and a server on loopback.
    Emulate(emulate::EmulateArgs),
    /// Run a scenario in the simulator and with Linux's own TCP (cubic, reno, bbr) through
    /// the TUN link (root), and compare goodput and RTT flow by flow.
    Crosscheck(crosscheck::CrosscheckArgs),
    /// Run any program behind the emulated link, in a network namespace of its own (root):
    /// `kleinrock shell --link 20Mbps,40ms,1bdp -- curl http://10.77.0.2:8000/`.
    Shell(shell::ShellArgs),
    /// Measure the simulator (bottleneck packets per wall second) or, with --emulator, the
    /// real-time emulator (forwarding capacity, highest valid link rate).
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => cmd_run(args, false),
        Command::Sweep(args) => cmd_run(args, true),
        Command::List => {
            emit(&list_text());
            Ok(())
        }
        Command::Demo { out, quiet } => cmd_demo(out, quiet),
        Command::Reproduce {
            paper,
            list,
            out,
            quiet,
        } => cmd_reproduce(paper, list, out, quiet),
        Command::Report { dir } => cmd_report(&dir),
        Command::Transfer(args) => transfer::run(args),
        Command::Tunnel(args) => tunnel::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Send(args) => send::run(args),
        Command::Emulate(args) => emulate::run(args),
        Command::Shell(args) => shell::run(args),
        Command::Crosscheck(args) => crosscheck::run(args),
        Command::Bench(args) => bench::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn cmd_run(args: RunArgs, sweep: bool) -> Result<(), String> {
    let set = load(&args.file, &args.set).map_err(|e| e.to_string())?;
    if let Some(dir) = &args.out {
        check_output_dir(dir)?;
    }
    if set.is_sweep && !sweep {
        return Err(format!(
            "{} has a [sweep] table of {} runs; run it with `kleinrock sweep {}`",
            args.file.display(),
            set.points.len(),
            args.file.display()
        ));
    }
    if set.points.iter().any(|p| p.check_simulated().is_err()) {
        return kernel_scenario(&args, &set);
    }
    let outputs = execute(&set, args.quiet);
    report(&set, &outputs, args.json)?;
    if let Some(dir) = args.out {
        save(&dir, &set, &outputs, args.quiet)?;
    }
    Ok(())
}

/// Runs a scenario of kernel flows through the TUN link, in real time.
fn kernel_scenario(args: &RunArgs, set: &ScenarioSet) -> Result<(), String> {
    let [s] = &set.points[..] else {
        return Err(format!(
            "{}: kernel flows run in real time, one scenario at a time; run each point with \
             `kleinrock run --set`",
            args.file.display()
        ));
    };
    if let Some(missing) = kleinrock_quic::netns::check_support() {
        return Err(missing);
    }
    live::remove_namespaces_on_signal()?;
    let bar = progress(None, "{spinner} {msg}, {elapsed}", args.quiet);
    let secs = s.duration.as_secs_f64();
    bar.set_message(format!(
        "{}: Linux TCP through the TUN link, {secs} s",
        s.name
    ));
    let out = kernel_run::run(s);
    bar.finish_and_clear();
    let out = out?;
    if args.json {
        let text = serde_json::to_string_pretty(&out.summary).map_err(|e| e.to_string())?;
        emit(&format!("{text}\n"));
    } else {
        emit(&run_tables(&out.summary));
    }
    if let Some(dir) = &args.out {
        kernel_run::save(dir, &out)?;
        if !args.quiet {
            eprintln!("wrote {}", dir.display());
        }
    }
    match out.link.why_invalid() {
        Some(why) => Err(format!(
            "the TUN link fell behind ({why}): this run is not valid"
        )),
        None => Ok(()),
    }
}

fn save(dir: &Path, set: &ScenarioSet, outputs: &[RunOutput], quiet: bool) -> Result<(), String> {
    write_outputs(dir, set, outputs).map_err(|e| format!("cannot write {}: {e}", dir.display()))?;
    if !quiet {
        eprintln!("wrote {}", dir.display());
    }
    Ok(())
}

/// Prints to standard output; a closed pipe (`kleinrock list | head`) ends the program quietly.
pub(crate) fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to standard output: {e}");
        std::process::exit(2);
    }
}

/// A progress indicator on standard error: a bar of `len` steps, or a spinner without. It is
/// hidden with `--quiet` and when standard error is not a terminal (indicatif would not draw
/// there either; this says so).
fn progress(len: Option<u64>, template: &str, quiet: bool) -> ProgressBar {
    let target = if quiet || !std::io::stderr().is_terminal() {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    };
    let bar = ProgressBar::with_draw_target(len, target);
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// Runs every point of `set` on all cores; a bar counts the runs, or for a single run a
/// spinner shows the time spent (the simulator reports no progress of its own).
fn execute(set: &ScenarioSet, quiet: bool) -> Vec<RunOutput> {
    let bar = match set.points.as_slice() {
        [one] => {
            let bar = progress(None, "{spinner} {msg}, {elapsed}", quiet);
            let simulated = one.duration.as_secs_f64();
            bar.set_message(format!("{}: simulating {simulated} s", set.name));
            bar
        }
        points => {
            let template = "{spinner} {msg} [{bar:30}] {pos}/{len} runs, {elapsed}";
            let bar = progress(Some(points.len() as u64), template, quiet);
            bar.set_message(set.name.clone());
            bar
        }
    };
    let outputs = run_all(&set.points, || bar.inc(1));
    bar.finish_and_clear();
    outputs
}

fn report(set: &ScenarioSet, outputs: &[RunOutput], json: bool) -> Result<(), String> {
    let summaries: Vec<&Summary> = outputs.iter().map(|o| &o.summary).collect();
    if json {
        let text = if set.is_sweep {
            serde_json::to_string_pretty(&sweep_report(summaries, set.seeds.as_deref()))
        } else {
            serde_json::to_string_pretty(summaries[0])
        };
        emit(&format!("{}\n", text.map_err(|e| e.to_string())?));
    } else if !set.is_sweep {
        emit(&run_tables(summaries[0]));
    } else if let Some(seeds) = &set.seeds {
        emit(&replicate_table(&summaries, seeds));
    } else {
        emit(&sweep_table(&summaries));
    }
    Ok(())
}

fn cmd_demo(out: Option<PathBuf>, quiet: bool) -> Result<(), String> {
    let set = parse(DEMO_SCENARIO, "<built-in demo>", "demo", &[]).map_err(|e| e.to_string())?;
    if let Some(dir) = &out {
        check_output_dir(dir)?;
    }
    emit(&format!(
        "kleinrock demo: {}\n\n",
        set.points.first().map_or("", |p| p.description.as_str())
    ));
    let outputs = execute(&set, quiet);
    report(&set, &outputs, false)?;
    emit(
        "\nBoth fill the link; loss-based control keeps the 2 BDP buffer full, so the RTT sits\n\
         well above the 50 ms base. `kleinrock demo --out DIR` writes the cwnd and queue traces.\n",
    );
    if let Some(dir) = out {
        save(&dir, &set, &outputs, quiet)?;
    }
    Ok(())
}

fn cmd_reproduce(
    paper: Option<String>,
    list: bool,
    out: Option<PathBuf>,
    quiet: bool,
) -> Result<(), String> {
    let papers = kleinrock_lab::reproduce::papers();
    let names = || papers.iter().map(|p| p.name).collect::<Vec<_>>().join(", ");
    if list {
        for p in papers {
            emit(&format!("{:<8} {}\n", p.name, p.title));
        }
        return Ok(());
    }
    let name = paper.unwrap_or_default();
    let info = kleinrock_lab::reproduce::find(&name)
        .ok_or_else(|| format!("unknown paper `{name}`; accepted: {}", names()))?;
    if let Some(dir) = &out {
        check_output_dir(dir)?;
    }
    let bar = progress(None, "{spinner} {msg}, {elapsed}", quiet);
    let report = (info.run)(&|step: &str| bar.set_message(format!("running {step}")))?;
    bar.finish_and_clear();
    emit(&report.render());
    if let Some(dir) = out {
        report
            .write(&dir)
            .map_err(|e| format!("cannot write {}: {e}", dir.display()))?;
        if !quiet {
            eprintln!("wrote {}", dir.display());
        }
    }
    Ok(())
}

fn cmd_report(dir: &Path) -> Result<(), String> {
    kleinrock_lab::html::rebuild(dir)?;
    eprintln!("wrote {}", dir.join(kleinrock_lab::html::REPORT).display());
    Ok(())
}

fn list_text() -> String {
    let mut out = String::new();
    for info in kleinrock_cc::controllers() {
        out.push_str(&format!("{}: {}\n", info.name, info.summary));
        if info.params.is_empty() {
            out.push_str("  (no parameters)\n\n");
            continue;
        }
        let mut t = Table::new(&["  parameter", "default", "meaning"]).all_text();
        for p in info.params {
            t.row(vec![
                format!("  {}", p.name),
                p.default.to_string(),
                p.doc.to_string(),
            ]);
        }
        out.push_str(&t.render());
        out.push('\n');
    }
    out
}
