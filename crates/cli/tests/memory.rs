//! Memory bounds of simulated runs. Each configuration here once took the machine's memory
//! (several GB within seconds, or a failed 32 GB allocation); each now runs, or is refused,
//! within a stated bound. Every run has an address-space limit, so a regression fails here
//! with a message instead of the kernel killing the test, and its peak resident memory is read
//! from the kernel's accounting of the child.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Address space each run may use: far above any bound below, far below the machine.
const ADDRESS_SPACE_BYTES: u64 = 4 << 30;

/// What a run of `kleinrock` did.
struct Run {
    code: i32,
    stderr: String,
    peak_rss_mb: f64,
}

/// A scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("memory-{name}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Runs `kleinrock args` under [`ADDRESS_SPACE_BYTES`], output to files in `dir`.
fn kleinrock(dir: &Path, args: &[&str]) -> Run {
    let out = fs::File::create(dir.join("stdout")).expect("stdout file");
    let err = fs::File::create(dir.join("stderr")).expect("stderr file");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kleinrock"));
    cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: ADDRESS_SPACE_BYTES,
                rlim_max: ADDRESS_SPACE_BYTES,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    // Reaped by `wait_with_peak_rss`, which also reads its resource usage.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().expect("kleinrock starts");
    let (code, peak_rss_mb) = wait_with_peak_rss(child.id() as libc::pid_t);
    Run {
        code,
        stderr: fs::read_to_string(dir.join("stderr")).unwrap_or_default(),
        peak_rss_mb,
    }
}

/// Waits for child `pid`; its exit code (128 + signal if killed) and its peak resident memory.
fn wait_with_peak_rss(pid: libc::pid_t) -> (i32, f64) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own unwaited child; both pointers are valid for the call.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    (code, usage.ru_maxrss as f64 / 1024.0)
}

/// A 1 Mbit/s, 10 ms round-trip dumbbell with one flow given by `flow` (TOML lines).
fn small_path(duration: &str, flow: &str) -> String {
    format!(
        "duration = \"{duration}\"\n\
         [[links]]\nname = \"ab\"\nrate = \"1Mbps\"\ndelay = \"5ms\"\nbuffer = \"100pkt\"\n\
         [[links]]\nname = \"ba\"\nrate = \"1Mbps\"\ndelay = \"5ms\"\nbuffer = \"100pkt\"\n\
         [[flows]]\npath = [\"ab\"]\nreverse_path = [\"ba\"]\n{flow}\n"
    )
}

fn write(dir: &Path, text: &str) -> String {
    let path = dir.join("scenario.toml");
    fs::write(&path, text).expect("scenario written");
    path.display().to_string()
}

#[test]
fn an_unpaced_sender_with_an_endless_window_stays_within_its_window_bound() {
    let dir = scratch("endless-window");
    // A window of 10^9 packets: without the transport's bound, one event sent all of them.
    let flow = "cc = \"newreno\"\nparams = { initial_window = 1000000000 }\npacing = false";
    let file = write(&dir, &small_path("5s", flow));
    let run = kleinrock(&dir, &["run", &file]);
    assert_eq!(run.code, 0, "the run fails: {}", run.stderr);
    // At most max_in_flight = 2^18 packets are outstanding (about 100 bytes of sender and
    // link state each, 26 MB); measured 34 MB for the whole process.
    assert!(
        run.peak_rss_mb < 128.0,
        "peak resident memory {:.0} MB, bound 128 MB",
        run.peak_rss_mb
    );
}

#[test]
fn a_rate_based_controller_without_pacing_is_refused_with_the_field_named() {
    let dir = scratch("rate-based");
    for cc in ["delay_fq", "vivace", "pcc", "fq_switch"] {
        let file = write(
            &dir,
            &small_path("5s", &format!("cc = \"{cc}\"\npacing = false")),
        );
        let run = kleinrock(&dir, &["run", &file]);
        assert_eq!(run.code, 2, "{cc}: {}", run.stderr);
        assert!(
            run.stderr.contains("flows[0].pacing") && run.stderr.contains("rate-based"),
            "{cc}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_huge_count_is_refused_before_anything_is_allocated() {
    let dir = scratch("huge-count");
    let flow = "cc = \"cubic\"\ncount = 100000000";
    let file = write(&dir, &small_path("5s", flow));
    let run = kleinrock(&dir, &["run", &file]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("flows[0].count")
            && run.stderr.contains("a whole number from 1 to 10000"),
        "{}",
        run.stderr
    );
    assert!(run.peak_rss_mb < 64.0, "{:.0} MB", run.peak_rss_mb);
}

/// Peak resident memory of the re-detection scenario with `fq_switch` probing every 5 s, run
/// for `duration`.
fn redetection_peak_rss_mb(dir: &Path, duration: &str) -> f64 {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/fq-detect/redetect.toml");
    let run = kleinrock(
        dir,
        &[
            "sweep",
            &file.display().to_string(),
            "--set",
            &format!("duration={duration}"),
            "--set",
            "trace_interval=10s",
            "--set",
            "sweep.\"flows.1.params.redetect\"=[\"5s\"]",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.peak_rss_mb
}

#[test]
fn closed_subflows_are_freed() {
    let dir = scratch("closed-subflows");
    let short = redetection_peak_rss_mb(&dir, "60s");
    let long = redetection_peak_rss_mb(&dir, "1800s");
    // 348 more probes, each opening and closing a subflow. Kept whole they cost about 70 kB
    // each (24 MB); freed, what remains of each (its receiver, its routing entry, its class at
    // the fair queue) is a few kB: 1.4 MB measured.
    assert!(
        long - short < 4.0,
        "peak resident memory grew from {short:.1} MB (60 s) to {long:.1} MB (1800 s)"
    );
}
