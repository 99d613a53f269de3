//! The TUN link as a user meets it: `kleinrock shell`, kernel flows in `kleinrock run`, and
//! `kleinrock crosscheck`, with their namespaces removed however the run ends. These tests need
//! root and `/dev/net/tun`: as root (CI) a missing capability fails them, elsewhere they skip
//! and say why. They run one at a time: each measures real time on two cores.

use kleinrock_quic::netns;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kleinrock-tun-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs kleinrock to its end; its output, and whether it left namespaces behind.
fn kleinrock(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_kleinrock"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kleinrock runs");
    let pid = child.id();
    let out = child.wait_with_output().expect("kleinrock ends");
    let left = namespaces_of(pid);
    assert!(left.is_empty(), "{args:?} left {left:?}");
    out
}

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kleinrock"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("kleinrock starts")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The namespaces of process `pid`.
fn namespaces_of(pid: u32) -> Vec<String> {
    let prefix = format!("kr-{pid}-");
    netns::ours()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// Waits (at most 10 s) until process `pid` has made its two namespaces.
fn wait_for_namespaces(pid: u32) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let names = namespaces_of(pid);
        if names.len() == 2 {
            return names;
        }
        assert!(
            Instant::now() < deadline,
            "no namespaces after 10 s: {names:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

const LINK: &str = "10Mbps,40ms,1bdp";

#[test]
fn shell_runs_a_kernel_download_behind_the_link_and_exits_with_its_status() {
    if !netns::tests_can_run() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // 1.25 MB at 10 Mbit/s takes at least 1 s.
    let serve = "python3 -c \"import socket; s = socket.socket(); \
                 s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); \
                 s.bind(('10.77.0.2', 7000)); s.listen(); c, _ = s.accept(); \
                 c.sendall(b'x' * 1250000); c.close()\"";
    let fetch = "import socket, sys, time; t = time.time(); \
                 s = socket.create_connection(('10.77.0.2', 7000)); n = 0\n\
                 while True:\n    d = s.recv(65536)\n    if not d: break\n    n += len(d)\n\
                 print(n, time.time() - t); sys.exit(3)";
    let o = kleinrock(&[
        "shell", "--link", LINK, "--serve", serve, "--", "python3", "-c", fetch,
    ]);
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(3),
        "the command's status: {out} {err}"
    );
    let mut words = out.split_whitespace();
    let bytes: u64 = words.next().and_then(|w| w.parse().ok()).expect(&out);
    let secs: f64 = words.next().and_then(|w| w.parse().ok()).expect(&out);
    assert_eq!(bytes, 1_250_000, "{out}");
    assert!(secs >= 1.0, "1.25 MB in {secs} s: faster than the link");
    assert!(err.contains("valid"), "the link's verdict: {err}");
}

#[test]
fn shell_refuses_what_it_cannot_run_and_leaves_nothing() {
    if !netns::tests_can_run() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let o = kleinrock(&["shell", "--link", LINK]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert!(text(&o).1.contains("COMMAND"), "{:?}", text(&o));
    let dir = scratch("bad-trace");
    let scenario = dir.join("s.toml");
    std::fs::write(dir.join("k.toml"), kernel_scenario("kernel:cubic")).unwrap();
    for (name, trace, words) in [
        ("empty", "", &["rate_trace", "no times"][..]),
        ("word", "1\nfast\n", &["line 2", "`fast`"][..]),
        ("back", "5\n3\n", &["line 2", "must not decrease"][..]),
    ] {
        std::fs::write(dir.join("t.trace"), trace).unwrap();
        std::fs::write(&scenario, traced_scenario("t.trace")).unwrap();
        let o = kleinrock(&["shell", "--scenario", path(&scenario), "--", "true"]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        for w in words {
            assert!(err.contains(w), "{name}: `{w}` not in {err}");
        }
    }
    // Without root: one line saying so, status 2 (util-linux's setpriv drops to nobody).
    for args in [
        &["shell", "--link", LINK, "--", "true"][..],
        &["run", "k.toml"][..],
    ] {
        let o = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_kleinrock"))
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("setpriv runs");
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("needs root"), "{args:?}: {err}");
    }
    let o = kleinrock(&["shell", "--link", LINK, "--", "/nonexistent/program"]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert!(
        text(&o).1.contains("/nonexistent/program"),
        "{:?}",
        text(&o)
    );
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

fn traced_scenario(trace: &str) -> String {
    format!(
        "duration = \"5s\"\n\
         [[links]]\nname = \"down\"\nrate_trace = \"{trace}\"\ndelay = \"10ms\"\nbuffer = \"100pkt\"\n\
         [[links]]\nname = \"up\"\nrate = \"10Mbps\"\ndelay = \"10ms\"\nbuffer = \"100pkt\"\n\
         [[flows]]\nname = \"f\"\ncc = \"cubic\"\npath = [\"down\"]\nreverse_path = [\"up\"]\n"
    )
}

#[test]
fn a_killed_run_leaves_namespaces_that_the_next_start_removes() {
    if !netns::tests_can_run() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut child = spawn(&["shell", "--link", LINK, "--", "sleep", "30"]);
    let names = wait_for_namespaces(child.id());
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    assert_eq!(namespaces_of(child.id()), names, "SIGKILL leaves them");
    // Their TUN devices went with the killed process's descriptors.
    for ns in &names {
        let shown = Command::new("ip")
            .args(["-n", ns, "link", "show", "tun0"])
            .output()
            .expect("ip runs");
        assert!(!shown.status.success(), "{ns} still has its TUN device");
    }
    let o = kleinrock(&["shell", "--link", LINK, "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(
        namespaces_of(child.id()).is_empty(),
        "the next start removes them"
    );
}

#[test]
fn sigterm_and_sigint_end_the_run_and_remove_its_namespaces() {
    if !netns::tests_can_run() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("signals");
    let file = dir.join("k.toml");
    std::fs::write(
        &file,
        kernel_scenario("kernel:cubic").replace("\"4s\"", "\"60s\""),
    )
    .unwrap();
    let shell = ["shell", "--link", LINK, "--", "sleep", "30"];
    let run = ["run", path(&file), "-q"];
    for (args, signal) in [
        (&shell[..], libc::SIGTERM),
        (&shell[..], libc::SIGINT),
        (&run[..], libc::SIGTERM),
        (&run[..], libc::SIGINT),
    ] {
        let mut child = spawn(args);
        wait_for_namespaces(child.id());
        // SAFETY: signals our own child, which has not been reaped.
        unsafe { libc::kill(child.id() as i32, signal) };
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(s) = child.try_wait().expect("waits") {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "{args:?} still running 10 s after signal {signal}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        // `shell` passes SIGINT on to its command and ends it with SIGTERM, and exits as its
        // command did; `run` exits as the signal's: 128 plus its number either way.
        assert_eq!(
            status.code(),
            Some(128 + signal),
            "{args:?}, signal {signal}"
        );
        assert!(
            namespaces_of(child.id()).is_empty(),
            "{args:?}, signal {signal}"
        );
    }
}

fn kernel_scenario(cc: &str) -> String {
    format!(
        "name = \"k\"\nduration = \"4s\"\nwarmup = \"1s\"\ntrace_interval = \"10ms\"\n\
         [[links]]\nname = \"bottleneck\"\nrate = \"10Mbps\"\ndelay = \"20ms\"\nbuffer = \"1bdp\"\n\
         [[links]]\nname = \"return\"\nrate = \"10Mbps\"\ndelay = \"20ms\"\nbuffer = \"1000pkt\"\n\
         [[flows]]\nname = \"bulk\"\ncc = \"{cc}\"\npath = [\"bottleneck\"]\n\
         reverse_path = [\"return\"]\n"
    )
}

#[test]
fn a_kernel_algorithm_the_kernel_lacks_is_refused_with_what_it_offers() {
    if !netns::tests_can_run() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("kernel-lacks");
    let file = dir.join("k.toml");
    std::fs::write(&file, kernel_scenario("kernel:nosuchcc")).unwrap();
    let out = dir.join("out");
    let o = kleinrock(&["run", path(&file), "--out", path(&out)]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for w in ["flows[0].cc", "nosuchcc", "offers", "cubic"] {
        assert!(err.contains(w), "`{w}` not in {err}");
    }
    assert!(!out.exists(), "nothing written");
}

#[test]
fn a_kernel_flow_runs_through_the_tun_link_and_reports_as_a_simulated_one() {
    if !netns::tests_can_run() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("kernel-flow");
    let file = dir.join("k.toml");
    std::fs::write(&file, kernel_scenario("kernel:cubic")).unwrap();
    let out = dir.join("out");
    let o = kleinrock(&["run", path(&file), "--out", path(&out), "-q"]);
    let (stdout, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout} {err}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let flow = &summary["flows"][0];
    assert_eq!(flow["cc"], "kernel:cubic");
    let goodput = flow["goodput_bps"].as_f64().expect("goodput");
    // At most the link's payload rate, 10 Mbit/s x 1448/1500 (MSS 1448 in 1500-byte
    // packets); at least 80 % of it once slow start has filled the 1 BDP buffer (from 1 s on).
    let payload_rate = 10e6 * 1448.0 / 1500.0;
    assert!(goodput <= payload_rate * 1.01, "{goodput}");
    assert!(goodput >= 0.8 * payload_rate, "{goodput}");
    // The RTT: at least the base 40 ms, at most the base plus a full 1 BDP buffer.
    let rtt = flow["rtt_p50_ms"].as_f64().expect("an RTT");
    assert!((40.0..=85.0).contains(&rtt), "{rtt}");
    let csv = std::fs::read_to_string(out.join("flows").join("bulk.csv")).unwrap();
    let header = csv.lines().next().unwrap_or_default();
    for column in ["time_s", "mode", "cwnd_bytes", "srtt_ms", "delivered_bytes"] {
        assert!(header.contains(column), "{header}");
    }
    assert!(csv.lines().count() > 300, "a sample every 10 ms for 4 s");
    // The simulator refuses what it cannot run, naming the flow.
    let o = kleinrock(&["transfer", "--scenario", path(&file)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("flows[0].cc"), "{:?}", text(&o));
}

#[test]
fn crosscheck_puts_the_simulator_beside_the_kernel() {
    if !netns::tests_can_run() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/crosscheck/20mbps-40ms-1bdp.toml");
    let dir = scratch("crosscheck");
    let out = dir.join("out");
    let o = kleinrock(&[
        "crosscheck",
        path(&file),
        "--set",
        "duration=6s",
        "--set",
        "warmup=2s",
        "--set",
        "sweep.\"flows.0.cc\"=[\"cubic\", \"vivace\"]",
        "--out",
        path(&out),
        "-q",
    ]);
    let (stdout, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout} {err}");
    assert!(stdout.contains("flows.0.cc=cubic"), "{stdout}");
    assert!(stdout.contains("skipped flows.0.cc=vivace"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("crosscheck.json")).unwrap())
            .unwrap();
    let row = &json["rows"][0];
    let (sim, kernel) = (
        row["sim_goodput_mbps"].as_f64().unwrap(),
        row["kernel_goodput_mbps"].as_f64().unwrap(),
    );
    // Both fill most of the 20 Mbit/s link from 2 s on.
    assert!(sim > 15.0 && kernel > 15.0, "{sim} {kernel}");
    assert!(out.join("points/1/kernel/flows/bulk.csv").exists());
    let html = std::fs::read_to_string(out.join("report.html")).expect("a report");
    assert!(
        html.contains("flows.0.cc=cubic: flow bulk"),
        "the point's plots"
    );
    assert!(std::fs::read_to_string(out.join("report.txt")).is_ok_and(|t| t == stdout));
    assert!(out.join("points/1/simulated/summary.json").exists());
}
