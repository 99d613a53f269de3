//! The run's own network namespaces and TUN devices: a client namespace and a server
//! namespace, each with one TUN device, whose other ends the TUN link holds (see
//! [`crate::emulator::start_tun`]).
//!
//! # Names and lifetime
//!
//! A namespace is named `kr-<pid>-<start>-<seq>-<side>` (`side` `c` or `s`), where `start` is
//! the process's start time in clock ticks since boot (`/proc/self/stat`, field 22), so that a
//! name outlives neither its process nor a later process with the same pid. [`Namespaces`]
//! deletes both when dropped; a run killed before that (SIGKILL) leaves them behind, and
//! [`Namespaces::create`] deletes every `kr-` namespace whose process is gone before it makes
//! its own. Before deleting them, it kills every process still in them (`ip netns pids`): a
//! server, a command's background jobs. TUN devices are not persistent: the kernel removes
//! one when its last descriptor closes, which the kernel also does for a killed process.
//!
//! Namespaces are made and configured with iproute2's `ip` (`ip netns add`, `ip -n NS ...`),
//! TUN devices with `TUNSETIFF` on `/dev/net/tun`; programs enter a namespace with
//! `setns(2)`. All of it needs root (`CAP_SYS_ADMIN` and `CAP_NET_ADMIN`); [`check_support`]
//! says what is missing.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Where `ip netns` keeps its namespaces.
const NETNS_DIR: &str = "/run/netns";
/// The prefix of every namespace kleinrock makes.
const PREFIX: &str = "kr-";
/// The client side's address on its TUN device.
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// The server side's address on its TUN device: where programs in the client namespace reach
/// the server side.
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
/// MTU of both TUN devices (Ethernet's).
pub const MTU: u32 = 1500;

/// Which namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Where programs run (`shell`), the data's receiver of a download.
    Client,
    /// Where the server address lives.
    Server,
}

impl Side {
    fn letter(self) -> char {
        match self {
            Side::Client => 'c',
            Side::Server => 's',
        }
    }

    /// This side's address.
    pub fn addr(self) -> Ipv4Addr {
        match self {
            Side::Client => CLIENT_ADDR,
            Side::Server => SERVER_ADDR,
        }
    }

    fn peer(self) -> Ipv4Addr {
        match self {
            Side::Client => SERVER_ADDR,
            Side::Server => CLIENT_ADDR,
        }
    }
}

/// What the TUN link needs and this machine or process lacks, in one line; `None` when it can
/// run.
pub fn check_support() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some(
            "the TUN link needs root (network namespaces and TUN devices); run as root".into(),
        );
    }
    if let Err(e) = File::options().read(true).write(true).open("/dev/net/tun") {
        return Some(format!(
            "the TUN link needs /dev/net/tun, which does not open: {e}"
        ));
    }
    match ip(&["-V"]) {
        Ok(_) => None,
        Err(_) => Some("the TUN link needs iproute2's `ip` command on the PATH".into()),
    }
}

/// For tests of the TUN link: true when it can run here; false, after printing why, when this
/// process is not root (the test then skips); a root process that lacks `/dev/net/tun` or
/// `ip` panics, since there (as on CI) a missing capability is a failure, not a skip.
pub fn tests_can_run() -> bool {
    let Some(why) = check_support() else {
        return true;
    };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        panic!("running as root, but {why}");
    }
    eprintln!("skipped: {why}");
    false
}

/// Runs `ip` with `args`: its output, or its error output on failure.
fn ip(args: &[&str]) -> Result<String, String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The start time of process `pid` in clock ticks since boot, if it is alive.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces; count after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether namespace `name` is one of ours whose process is gone.
fn is_stale(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(PREFIX) else {
        return false;
    };
    let mut parts = rest.split('-');
    let (Some(pid), Some(start)) = (parts.next(), parts.next()) else {
        return false;
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
        return false;
    };
    start_ticks(pid) != Some(start)
}

/// Deletes the namespaces of kleinrock runs that were killed; how many.
pub fn remove_stale() -> usize {
    ours()
        .iter()
        .filter(|n| is_stale(n))
        .filter(|n| ip(&["netns", "delete", n]).is_ok())
        .count()
}

/// Deletes the namespaces this process made (for a process about to exit on a signal: the
/// kernel releases what they still hold when its descriptors close); how many.
pub fn remove_own() -> usize {
    let pid = std::process::id();
    let prefix = format!("{PREFIX}{pid}-{}-", start_ticks(pid).unwrap_or(0));
    ours()
        .iter()
        .filter(|n| n.starts_with(&prefix))
        .filter(|n| ip(&["netns", "delete", n]).is_ok())
        .count()
}

/// The namespaces kleinrock made and configured now, by name.
pub fn ours() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(PREFIX))
        .collect()
}

/// Runs made by this process, for unique names.
static SEQ: AtomicU32 = AtomicU32::new(0);

/// A client and a server namespace, each with a TUN device whose descriptor this holds;
/// dropping it deletes both namespaces.
#[derive(Debug)]
pub struct Namespaces {
    names: [String; 2],
    tuns: Option<[OwnedFd; 2]>,
}

impl Namespaces {
    /// Removes stale namespaces, then makes and configures the two of this run: each has `lo`
    /// up and a TUN device (point to point, [`MTU`]) with its side's address.
    pub fn create() -> Result<Namespaces, String> {
        if let Some(missing) = check_support() {
            return Err(missing);
        }
        remove_stale();
        let pid = std::process::id();
        let start = start_ticks(pid).unwrap_or(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let name = |s: Side| format!("{PREFIX}{pid}-{start}-{seq}-{}", s.letter());
        let mut ns = Namespaces {
            names: [name(Side::Client), name(Side::Server)],
            tuns: None,
        };
        for n in &ns.names {
            ip(&["netns", "add", n])?;
        }
        // Interface names have at most 15 bytes: unique among this process's runs while they
        // are in the root namespace, for the moment before they move.
        let dev = |s: Side| format!("kr{pid}-{}{}", seq % 10_000, s.letter());
        let client = ns.device(Side::Client, &dev(Side::Client))?;
        let server = ns.device(Side::Server, &dev(Side::Server))?;
        ns.tuns = Some([client, server]);
        Ok(ns)
    }

    /// The name of a side's namespace.
    pub fn name(&self, side: Side) -> &str {
        match side {
            Side::Client => &self.names[0],
            Side::Server => &self.names[1],
        }
    }

    /// Takes the two TUN descriptors (client, server); `None` the second time.
    pub fn take_tuns(&mut self) -> Option<[OwnedFd; 2]> {
        self.tuns.take()
    }

    /// Makes TUN device `dev`, moves it into `side`'s namespace and configures it there.
    fn device(&self, side: Side, dev: &str) -> Result<OwnedFd, String> {
        let fd = open_tun(dev).map_err(|e| format!("cannot make TUN device {dev}: {e}"))?;
        let ns = self.name(side);
        let addr = format!("{}/32", side.addr());
        let peer = format!("{}/32", side.peer());
        let mtu = MTU.to_string();
        ip(&["link", "set", "dev", dev, "netns", ns])?;
        ip(&["-n", ns, "link", "set", "dev", dev, "name", "tun0"])?;
        self.ipv4_only(side)
            .map_err(|e| format!("cannot turn IPv6 off in namespace {ns}: {e}"))?;
        ip(&[
            "-n", ns, "address", "add", &addr, "peer", &peer, "dev", "tun0",
        ])?;
        ip(&["-n", ns, "link", "set", "dev", "tun0", "mtu", &mtu, "up"])?;
        ip(&["-n", ns, "link", "set", "dev", "lo", "up"])?;
        Ok(fd)
    }

    /// Turns IPv6 off on `side`'s TUN device, so that the kernel sends nothing of its own
    /// (router solicitations, multicast listener reports) through the link: every packet on
    /// it is the run's.
    fn ipv4_only(&self, side: Side) -> io::Result<()> {
        let ns = self.open(side)?;
        in_namespace(&ns, || {
            std::fs::write("/proc/sys/net/ipv6/conf/tun0/disable_ipv6", "1")
        })?
    }

    /// Packets the kernel dropped at the two TUN devices (their RX and TX `dropped`
    /// counters, `ip -s link`): packets the link model never saw, or delivered and the kernel
    /// did not take; 0 where the counters cannot be read.
    pub fn device_drops(&self) -> u64 {
        self.names
            .iter()
            .filter_map(|n| ip(&["-s", "-n", n, "link", "show", "tun0"]).ok())
            .map(|out| dropped(&out))
            .sum()
    }

    /// Opens `side`'s namespace, for [`enter`] and [`in_namespace`].
    pub fn open(&self, side: Side) -> io::Result<File> {
        File::open(format!("{NETNS_DIR}/{}", self.name(side)))
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        // Every program still in them (a server, a command's background jobs) ends first,
        // then the devices (closing their descriptors removes them), then the namespaces.
        for n in &self.names {
            kill_all_in(n);
        }
        self.tuns = None;
        for n in &self.names {
            let _ = ip(&["netns", "delete", n]);
        }
    }
}

/// Kills (SIGKILL) every process in namespace `name` but this one.
fn kill_all_in(name: &str) {
    let Ok(out) = ip(&["netns", "pids", name]) else {
        return;
    };
    let me = std::process::id();
    for pid in out
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
        .filter(|&p| p != me)
    {
        if let Ok(pid) = i32::try_from(pid) {
            // SAFETY: kill has no memory preconditions; the pid was in our namespace.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The `dropped` counts of `ip -s link show`'s RX and TX tables: the fourth number on the
/// line after each `RX:` and `TX:` header.
fn dropped(text: &str) -> u64 {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|w| {
            let head = w[0].trim_start();
            head.starts_with("RX:") || head.starts_with("TX:")
        })
        .filter_map(|w| w[1].split_whitespace().nth(3)?.parse::<u64>().ok())
        .sum()
}

/// `TUNSETIFF`: makes the descriptor of `/dev/net/tun` a TUN device.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// Opens a new non-blocking TUN device `name` (IP packets, no packet information header).
fn open_tun(name: &str) -> io::Result<OwnedFd> {
    let path = CString::new("/dev/net/tun").map_err(io::Error::other)?;
    // SAFETY: a valid NUL-terminated path; the returned descriptor is owned below.
    let raw = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a descriptor we just opened and own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: an all-zero ifreq is valid; the name fits (checked) with its NUL.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    let bytes = name.as_bytes();
    if bytes.len() >= req.ifr_name.len() {
        return Err(io::Error::other("interface name too long"));
    }
    for (d, &b) in req.ifr_name.iter_mut().zip(bytes) {
        *d = b as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = IFF_TUN | IFF_NO_PI;
    // SAFETY: TUNSETIFF reads and writes an ifreq, which `req` is.
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Moves the calling thread into the namespace open as `ns` (`setns(2)`); only this thread
/// moves, and sockets it creates afterwards belong to that namespace for good.
pub fn enter(ns: &File) -> io::Result<()> {
    // SAFETY: a live namespace descriptor and the network namespace type.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Runs `f` with the calling thread in namespace `ns`, then moves it back where it was.
pub fn in_namespace<T>(ns: &File, f: impl FnOnce() -> T) -> io::Result<T> {
    let home = File::open("/proc/thread-self/ns/net")?;
    enter(ns)?;
    let out = f();
    enter(&home)?;
    Ok(out)
}

/// Spawns `command` with its process in the namespace open as `ns`, killed (SIGKILL) when the
/// thread that spawned it ends, as when kleinrock dies, so that no program outlives the
/// namespaces of its run.
pub fn spawn_in(ns: &File, command: &mut Command) -> io::Result<Child> {
    let fd = ns.as_raw_fd();
    // SAFETY: the closure calls only async-signal-safe functions (setns, prctl) between fork
    // and exec; `ns` is borrowed, so `fd` stays open until the child is spawned.
    unsafe {
        command.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                return Err(io::Error::last_os_error());
            }
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            Ok(())
        });
    }
    command.spawn()
}

/// Passes SIGINT on to a child.
pub fn interrupt(child: &Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: signals our own child, which has not been reaped.
        unsafe { libc::kill(pid, libc::SIGINT) };
    }
}

/// Ends a child: SIGTERM, then SIGKILL if it is still there after `grace`.
pub fn terminate(child: &mut Child, grace: Duration) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: signals our own child, which has not been reaped.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_are_read_from_both_tables_of_ip_s_link() {
        let text = "5: tun0: <POINTOPOINT,UP> mtu 1500 qdisc pfifo_fast state UNKNOWN\n\
                    \x20   link/none\n\
                    \x20   RX:  bytes packets errors dropped  missed   mcast\n\
                    \x20     1500       1      0       3       0       0\n\
                    \x20   TX:  bytes packets errors dropped carrier collsns\n\
                    \x20     3000       2      0       4       0       0\n";
        assert_eq!(dropped(text), 7);
        assert_eq!(dropped(""), 0);
    }

    #[test]
    fn only_names_of_gone_processes_are_stale() {
        let me = std::process::id();
        let start = start_ticks(me).expect("our own start time");
        assert!(!is_stale(&format!("kr-{me}-{start}-0-c")), "ours, alive");
        assert!(
            is_stale(&format!("kr-{me}-{}-0-c", start + 1)),
            "an earlier process's pid"
        );
        assert!(!is_stale("other-namespace"), "not ours");
        assert!(!is_stale("kr-x-y"), "not our pattern");
    }
}
