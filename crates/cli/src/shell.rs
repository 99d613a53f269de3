//! `kleinrock shell`: runs any program behind the emulated link, as mahimahi's `mm-link` and
//! `mm-delay` do. kleinrock makes a client and a server network namespace joined by the TUN
//! link (crates/quic/src/netns.rs, `emulator::start_tun`), runs the command in the client
//! namespace, where the server side is 10.77.0.2, and removes both namespaces (and any
//! program left in them) when the command ends. SIGINT goes on to the command; SIGTERM and
//! SIGHUP end it. `--serve` runs a server in the server namespace
//! first. Afterwards it prints what the link carried and whether it kept time, and exits with
//! the command's exit status.

use crate::emulate::{describe, directions, link_scenario, stopped_event, stopped_text};
use crate::live;
use kleinrock_quic::emulator::{self, TunLink};
use kleinrock_quic::netns::{self, Namespaces, Side, SERVER_ADDR};
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// Arguments of `kleinrock shell`.
#[derive(clap::Args)]
#[command(trailing_var_arg = true)]
pub struct ShellArgs {
    /// Both directions as RATE,RTT,BUFFER (half the RTT each way), e.g. `20Mbps,40ms,1bdp`
    /// (default without --scenario: 10Mbps,50ms,2bdp): BUFFER is the server-to-client
    /// direction's (with --upload the other's), the other direction gets 1000 packets.
    #[arg(long, value_name = "RATE,RTT,BUFFER", conflicts_with = "scenario")]
    link: Option<String>,
    /// A scenario file with one flow whose paths are one link each way: its data path becomes
    /// the server-to-client direction, its ACK path the other (every link option applies:
    /// loss, jitter, policer, fq, rate schedules and traces).
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// With the flow's data path client-to-server instead (an upload).
    #[arg(long)]
    upload: bool,
    /// A shell command to run in the server namespace first (e.g. `python3 -m http.server
    /// 8000`); the command starts once it listens (at most 5 s), and it is stopped after.
    #[arg(long, value_name = "COMMAND")]
    serve: Option<String>,
    /// Print the link's statistics as a JSON line (on standard error).
    #[arg(long)]
    json: bool,
    /// The program and its arguments, run in the client namespace; the server side is
    /// 10.77.0.2.
    #[arg(required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// How long `--serve` has to start listening.
const SERVE_WAIT: Duration = Duration::from_secs(5);
/// How long a stopped program has between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// Runs `kleinrock shell`; exits with the command's status (128 + signal if a signal ended it).
pub fn run(args: ShellArgs) -> Result<(), String> {
    let s = link_scenario(args.link.as_deref(), args.scenario.as_deref())?;
    let (forward, reverse) = directions(&s, args.upload);
    let rt = live::runtime()?;
    let stop = rt.block_on(async { live::Stop::watch(None) })?;
    let tun = emulator::start_tun(&forward, &reverse, s.seed).map_err(|e| e.to_string())?;
    eprintln!(
        "kleinrock shell: {}; server side at {SERVER_ADDR} (namespace {})",
        describe(&forward, &reverse),
        tun.namespaces().name(Side::Server)
    );
    let status = run_in(&tun, &args, &rt, stop);
    let stats = tun.shutdown();
    let line = if args.json {
        stopped_event(&stats).to_string()
    } else {
        stopped_text(&stats)
    };
    eprintln!("{line}");
    let code = exit_code(status?);
    std::process::exit(code);
}

/// Runs the server (if any) and the command, stopping both on a signal; the command's status.
fn run_in(
    tun: &TunLink,
    args: &ShellArgs,
    rt: &tokio::runtime::Runtime,
    stop: live::Stop,
) -> Result<ExitStatus, String> {
    let ns = tun.namespaces();
    let mut server = match &args.serve {
        Some(cmd) => Some(start_server(ns, cmd)?),
        None => None,
    };
    let client = ns
        .open(Side::Client)
        .map_err(|e| format!("cannot open the client namespace: {e}"))?;
    let mut command = Command::new(&args.command[0]);
    command.args(&args.command[1..]);
    let mut child = spawn_in(&client, &mut command, ns)
        .map_err(|e| format!("cannot run `{}`: {e}", args.command[0]))?;
    let status = wait(&mut child, rt, stop);
    if let Some(s) = server.as_mut() {
        end(s);
    }
    status
}

/// Starts `cmd` (with `sh -c`) in the server namespace and waits until it listens.
fn start_server(ns: &Namespaces, cmd: &str) -> Result<Child, String> {
    let server_ns = ns
        .open(Side::Server)
        .map_err(|e| format!("cannot open the server namespace: {e}"))?;
    let mut command = Command::new("sh");
    command.arg("-c").arg(cmd);
    let mut child =
        spawn_in(&server_ns, &mut command, ns).map_err(|e| format!("--serve: cannot run: {e}"))?;
    let deadline = Instant::now() + SERVE_WAIT;
    while !listening(child.id()) {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "--serve `{cmd}` ended before it listened ({status})"
            ));
        }
        if Instant::now() >= deadline {
            end(&mut child);
            return Err(format!(
                "--serve `{cmd}` did not listen on a TCP or UDP port within {SERVE_WAIT:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(child)
}

/// Whether the namespace of process `pid` has a listening TCP socket or a bound UDP socket
/// (`/proc/PID/net/{tcp,tcp6,udp,udp6}` list that namespace's sockets).
fn listening(pid: u32) -> bool {
    let has = |file: &str, state: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/net/{file}")).is_ok_and(|t| {
            t.lines()
                .skip(1)
                .any(|l| l.split_whitespace().nth(3) == Some(state))
        })
    };
    // TCP_LISTEN is 0A; a bound UDP socket shows TCP_CLOSE, 07.
    has("tcp", "0A") || has("tcp6", "0A") || has("udp", "07") || has("udp6", "07")
}

/// Spawns `command` in the namespace open as `target` (see [`netns::spawn_in`]), with
/// `KLEINROCK_SERVER` (the server address) and `KLEINROCK_SERVER_NS` (the server namespace's
/// name) in its environment.
fn spawn_in(target: &File, command: &mut Command, ns: &Namespaces) -> std::io::Result<Child> {
    command
        .env("KLEINROCK_SERVER", SERVER_ADDR.to_string())
        .env("KLEINROCK_SERVER_NS", ns.name(Side::Server));
    netns::spawn_in(target, command)
}

/// Waits for the child to end. SIGINT is passed on to it (it decides, as an interactive
/// shell ignores it; from a terminal it has it already); SIGTERM and SIGHUP end it.
fn wait(
    child: &mut Child,
    rt: &tokio::runtime::Runtime,
    mut stop: live::Stop,
) -> Result<ExitStatus, String> {
    loop {
        let signal = rt.block_on(async {
            let exited = async {
                while !matches!(child.try_wait(), Ok(Some(_))) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            tokio::select! {
                s = stop.next_signal() => Some(s),
                () = exited => None,
            }
        });
        match signal {
            None => break,
            Some(2) => netns::interrupt(child),
            Some(_) => {
                end(child);
                break;
            }
        }
    }
    child
        .wait()
        .map_err(|e| format!("cannot wait for the command: {e}"))
}

/// Ends a child: SIGTERM, then SIGKILL after [`GRACE`].
fn end(child: &mut Child) {
    netns::terminate(child, GRACE);
}

/// The shell convention: the exit code, or 128 plus the signal that ended the program.
fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}
