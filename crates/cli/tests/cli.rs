//! The `kleinrock` command as a user meets it: bad input is refused with the field named and
//! nothing written; good input runs and writes its files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const GOOD: &str = r#"
duration = "2s"
trace_interval = "100ms"
[[links]]
name = "bottleneck"
rate = "10Mbps"
delay = "25ms"
buffer = "1bdp"
[[links]]
name = "return"
rate = "10Mbps"
delay = "25ms"
buffer = "100pkt"
[[flows]]
name = "bulk"
cc = "newreno"
path = ["bottleneck"]
reverse_path = ["return"]
"#;

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kleinrock-cli-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn kleinrock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kleinrock"))
        .args(args)
        .output()
        .expect("kleinrock runs")
}

fn run_bad(dir: &Path, name: &str, text: &str) -> (Output, PathBuf) {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    let out = dir.join(format!("{name}-out"));
    let o = kleinrock(&[
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    (o, out)
}

#[test]
fn bad_input_names_the_field_and_writes_nothing() {
    let dir = scratch("bad");
    let cases = [
        (
            "unknown-cc",
            GOOD.replace("\"newreno\"", "\"renoo\""),
            "flows[0].cc",
        ),
        (
            "unknown-field",
            GOOD.replace("duration = \"2s\"", "duration = \"2s\"\ncolour = 1"),
            "colour",
        ),
        (
            "negative-rate",
            GOOD.replacen("\"10Mbps\"", "\"-10Mbps\"", 1),
            "links[0].rate",
        ),
        (
            "zero-buffer",
            GOOD.replace("\"1bdp\"", "\"0pkt\""),
            "links[0].buffer",
        ),
        (
            "unknown-param",
            GOOD.replace(
                "cc = \"newreno\"",
                "cc = \"newreno\"\nparams = { gamma = 2 }",
            ),
            "flows[0].params.gamma",
        ),
        (
            "unknown-link",
            GOOD.replace("path = [\"bottleneck\"]", "path = [\"bottlenek\"]"),
            "flows[0].path",
        ),
        (
            "dccp-delayed-ack",
            GOOD.replace(
                "cc = \"newreno\"",
                "cc = \"ccid2\"\ntransport = \"dccp\"\ndelayed_ack = true",
            ),
            "flows[0].delayed_ack",
        ),
        (
            "dccp-ack-ratio-0",
            GOOD.replace(
                "cc = \"newreno\"",
                "cc = \"ccid5\"\ntransport = \"dccp\"\nack_ratio = 0",
            ),
            "flows[0].ack_ratio",
        ),
        (
            "tunnel-missing-link",
            format!(
                "{GOOD}[[tunnels]]\nname = \"t\"\n[[tunnels.paths]]\npath = [\"nowhere\"]\n\
                 reverse_path = [\"return\"]\ncc = \"ccid2\"\n"
            ),
            "tunnels[0].paths[0].path",
        ),
        (
            "ccid-on-reliable",
            GOOD.replace("\"newreno\"", "\"ccid2\""),
            "flows[0].cc",
        ),
    ];
    for (name, text, field) in cases {
        let (o, out) = run_bad(&dir, name, &text);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{name}: exit status {:?}",
            o.status
        );
        assert!(
            err.contains(field),
            "{name}: error does not name `{field}`: {err}"
        );
        assert!(
            err.contains(&format!("{name}.toml")),
            "{name}: error does not name the file: {err}"
        );
        assert!(!out.exists(), "{name}: output directory was created");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_writes_summary_and_traces() {
    let dir = scratch("good");
    let file = dir.join("good.toml");
    std::fs::write(&file, GOOD).unwrap();
    let out = dir.join("out");
    let o = kleinrock(&[
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("Gput Mbps") && table.contains("bulk"));
    for f in [
        "summary.json",
        "flows/bulk.csv",
        "links/bottleneck.csv",
        "rtt_cdf/bulk.csv",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let trace = std::fs::read_to_string(out.join("flows/bulk.csv")).unwrap();
    assert!(trace.starts_with("time_s,mode,cwnd_bytes"));
    assert_eq!(
        trace.lines().count(),
        22,
        "header + samples at 0, 0.1, ..., 2.0 s"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweep_file_is_refused_by_run_and_accepted_by_sweep() {
    let dir = scratch("sweep");
    let file = dir.join("s.toml");
    std::fs::write(
        &file,
        format!("{GOOD}\n[sweep]\n\"flows.0.cc\" = [\"newreno\", \"cubic\"]\n"),
    )
    .unwrap();
    let o = kleinrock(&["run", file.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("kleinrock sweep"));
    let o = kleinrock(&["sweep", file.to_str().unwrap(), "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn list_shows_every_controller_with_parameters() {
    let o = kleinrock(&["list"]);
    let text = String::from_utf8_lossy(&o.stdout);
    for name in ["newreno", "cubic", "beta", "hystart"] {
        assert!(text.contains(name), "`{name}` missing from list:\n{text}");
    }
}

#[test]
fn out_never_replaces_a_directory_that_is_not_ours() {
    let dir = scratch("out");
    let file = dir.join("good.toml");
    std::fs::write(&file, GOOD).unwrap();
    let precious = dir.join("data");
    std::fs::create_dir_all(&precious).unwrap();
    std::fs::write(precious.join("notes.txt"), "keep me").unwrap();
    let o = kleinrock(&[
        "run",
        file.to_str().unwrap(),
        "--out",
        precious.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a kleinrock output"));
    assert!(o.stdout.is_empty(), "refused before running");
    assert!(precious.join("notes.txt").is_file());
    let o = Command::new(env!("CARGO_BIN_EXE_kleinrock"))
        .args(["run", file.to_str().unwrap(), "--out", "."])
        .current_dir(&precious)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(precious.join("notes.txt").is_file());
    // An earlier kleinrock output is replaced.
    let out = dir.join("out");
    for _ in 0..2 {
        let o = kleinrock(&[
            "run",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert!(out.join("summary.json").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reproduce_lists_papers_and_rejects_unknown_ones() {
    let o = kleinrock(&["reproduce", "--list"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("bbr"));
    let o = kleinrock(&["reproduce", "bbrr"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bbrr") && err.contains("accepted: bbr"),
        "{err}"
    );
}

#[test]
fn transfer_moves_verified_bytes_over_real_quic_and_refuses_a_bad_link() {
    let o = kleinrock(&[
        "transfer",
        "--cc",
        "newreno",
        "--link",
        "10Mbps,20ms,2bdp",
        "--size",
        "2MB",
        "--set",
        "links.0.buffer=3bdp",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["real"]["flows"][0]["delivered_bytes"], 2_000_000);
    assert_eq!(v["real"]["overrides"][0][0], "links.0.buffer");
    let o = kleinrock(&["transfer", "--link", "10Mbps,20ms"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("RATE,RTT,BUFFER"));
}

#[test]
fn transfer_takes_a_point_of_a_shipped_sweep_and_set_like_run() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/demo.toml");
    let demo = demo.to_str().unwrap();
    let o = kleinrock(&["transfer", "--scenario", demo]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--point 1 to 2") && err.contains("2: flows.0.cc=cubic"),
        "{err}"
    );
    let o = kleinrock(&["transfer", "--scenario", demo, "--point", "2"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--set flows.0.size=20MB"), "{err}");
    let o = kleinrock(&["transfer", "--set", "flows.0.packet_size=10"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("flows[0].packet_size"), "{err}");
}

/// Runs kleinrock with standard error on a new pseudo-terminal of 100 columns and returns
/// what it wrote there (standard output is discarded).
fn stderr_on_a_terminal(args: &[&str]) -> String {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut leader, mut follower) = (-1, -1);
    let size = libc::winsize {
        ws_row: 24,
        ws_col: 100,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let null = std::ptr::null_mut();
    // SAFETY: openpty fills in two new descriptors, owned by the files made of them below;
    // close-on-exec keeps the other tests' children from holding the terminal open.
    let (leader, follower) = unsafe {
        assert_eq!(
            libc::openpty(&mut leader, &mut follower, null, std::ptr::null(), &size),
            0
        );
        for fd in [leader, follower] {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        (
            std::fs::File::from_raw_fd(leader),
            OwnedFd::from_raw_fd(follower),
        )
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_kleinrock"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(follower)
        .spawn()
        .expect("kleinrock starts");
    // Reading ends (with EIO) once the child, the last holder of the follower, has exited.
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = (&leader).read_to_end(&mut text);
        text
    });
    child.wait().unwrap();
    String::from_utf8_lossy(&reader.join().unwrap()).into_owned()
}

#[test]
fn progress_shows_on_a_terminal_and_quiet_hides_it() {
    let dir = scratch("quiet");
    let file = dir.join("good.toml");
    std::fs::write(&file, GOOD).unwrap();
    let sweep = dir.join("sweep.toml");
    std::fs::write(&sweep, format!("{GOOD}\n[sweep]\nreplicates = 2\n")).unwrap();
    let (file, sweep) = (file.to_str().unwrap(), sweep.to_str().unwrap());
    // main.rs `execute`: a single run shows a spinner with the simulated time.
    let shown = stderr_on_a_terminal(&["run", file]);
    assert!(shown.contains("simulating 2 s"), "{shown:?}");
    let shown = stderr_on_a_terminal(&["sweep", sweep]);
    assert!(shown.contains("/2 runs"), "the sweep's bar: {shown:?}");
    // --quiet: no progress and no `wrote DIR` line, and the results are still written.
    let out = dir.join("out");
    let out_text = out.to_str().unwrap();
    for args in [
        vec!["run", file, "--quiet", "--out", out_text],
        vec!["sweep", sweep, "--quiet", "--out", out_text],
        vec!["demo", "-q"],
    ] {
        assert_eq!(stderr_on_a_terminal(&args), "", "{args:?}");
    }
    assert!(out.join("sweep.json").is_file());
    // Standard error not a terminal: no progress, only the `wrote` line.
    let o = kleinrock(&["run", file, "--out", out_text]);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("wrote {out_text}\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sweep_with_replicates_prints_intervals_and_writes_aggregates() {
    let dir = scratch("replicates");
    let file = dir.join("r.toml");
    let lossy = GOOD.replacen("buffer = \"1bdp\"", "buffer = \"1bdp\"\nloss = 0.01", 1);
    std::fs::write(&file, format!("{lossy}\n[sweep]\nreplicates = 3\n")).unwrap();
    let out = dir.join("out");
    let o = kleinrock(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // README "Output": cells are `mean ± half-width`, with the seeds named below the table.
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains(" ± ") && table.contains("seeds 1 to 3"),
        "{table}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(json["aggregates"][0]["runs"], serde_json::json!([0, 1, 2]));
    assert!(
        out.join("point-2/summary.json").is_file(),
        "a directory per run"
    );
    // `run` refuses the file: it is a sweep of one point, three times.
    let o = kleinrock(&["run", file.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("[sweep] table of 3 runs"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_refuses_a_directory_that_is_not_an_output_and_a_damaged_summary() {
    let dir = scratch("report-bad");
    let o = kleinrock(&["report", dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("not a kleinrock output directory"), "{err}");
    std::fs::write(dir.join("summary.json"), "{\"flows\": [").unwrap();
    let o = kleinrock(&["report", dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("summary.json is damaged"), "{err}");
    assert!(!dir.join("report.html").exists(), "nothing is written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `kleinrock bench` runs the four workloads, each with its events per packet and memory per
/// flow; `--compare-htsim` with a binary that is not there fails naming it, with status 2.
#[test]
fn bench_reports_every_workload_and_refuses_a_missing_htsim() {
    let o = kleinrock(&["bench", "--seconds", "0.5"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.lines().next().unwrap().contains("ev/pkt"), "{text}");
    for w in [
        "(a) 1 Cubic",
        "(b) 10 Cubic",
        "(c) 1000 Cubic",
        "(d) 10000 Cubic",
    ] {
        let row = text.lines().find(|l| l.starts_with(w)).expect(w);
        let kb: f64 = row.split_whitespace().last().unwrap().parse().unwrap();
        assert!(kb > 0.0, "{row}");
    }
    let o = kleinrock(&[
        "bench",
        "--seconds",
        "0.1",
        "--compare-htsim",
        "/nonexistent/htsim",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/htsim"));
}
