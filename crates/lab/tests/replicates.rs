//! Replicates in sweeps (README "Scenario format", `[sweep]`): `seeds = [...]` or
//! `replicates = N` run every grid point once per seed, and each point's metrics are reported
//! as a mean with a 95 % confidence interval from Student's t with n - 1 degrees of freedom.

use kleinrock_lab::aggregate::{aggregate, sweep_report};
use kleinrock_lab::dumbbell::Dumbbell;
use kleinrock_lab::metrics::Summary;
use kleinrock_lab::runner::run_all;
use kleinrock_lab::scenario::{parse, ScenarioError, ScenarioSet};
use kleinrock_lab::stats::{t_975, Stat};

/// A 2 s NewReno dumbbell (10 Mbit/s, 50 ms RTT) with seed `seed` and 1 % random loss at the
/// bottleneck, so that the seed changes the run; `sweep` is the body of its `[sweep]` table.
fn scenario(seed: u64, sweep: &str) -> String {
    let text = Dumbbell {
        seed,
        ..Dumbbell::new("newreno", "10Mbps", "25ms", "1bdp", "2s")
    }
    .to_toml();
    let text = text.replacen("[[links]]\n", "[[links]]\nloss = 0.01\n", 1);
    format!("{text}\n[sweep]\n{sweep}\n")
}

fn load(text: &str, overrides: &[&str]) -> Result<ScenarioSet, ScenarioError> {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    parse(text, "replicates.toml", "test", &overrides)
}

/// The summaries of every run of `set`.
fn run(set: &ScenarioSet) -> Vec<Summary> {
    run_all(&set.points, || {})
        .into_iter()
        .map(|o| o.summary)
        .collect()
}

fn seeds_of(set: &ScenarioSet) -> Vec<u64> {
    set.points.iter().map(|p| p.seed).collect()
}

#[test]
fn replicates_count_up_from_the_file_seed_point_by_point() {
    let grid = "replicates = 3\n\"flows.0.cc\" = [\"newreno\", \"cubic\"]";
    let set = load(&scenario(7, grid), &[]).unwrap();
    // README: N seeds are the file's seed, seed + 1, ..., seed + N - 1, and the runs go point
    // by point, seed by seed within a point.
    assert_eq!(set.seeds, Some(vec![7, 8, 9]));
    assert_eq!(seeds_of(&set), [7, 8, 9, 7, 8, 9]);
    let ccs: Vec<&str> = set.points.iter().map(|p| p.flows[0].cc_name()).collect();
    assert_eq!(
        ccs,
        ["newreno", "newreno", "newreno", "cubic", "cubic", "cubic"]
    );
    // The seed is not a swept field: a point's runs share its assignments.
    assert!(set.points.iter().all(|p| p.point.len() == 1));
    // `--set seed` moves where the replicates start.
    let set = load(&scenario(7, grid), &["seed=100"]).unwrap();
    assert_eq!(set.seeds, Some(vec![100, 101, 102]));
}

#[test]
fn listed_seeds_are_taken_in_their_order() {
    let set = load(
        &scenario(
            1,
            "seeds = [5, 2]\n\"flows.0.cc\" = [\"newreno\", \"cubic\"]",
        ),
        &[],
    )
    .unwrap();
    assert_eq!(
        seeds_of(&set),
        [5, 2, 5, 2],
        "the list's order, within each point"
    );
    // Only `replicates`, no value list: a sweep of one point, once per seed.
    let set = load(&scenario(1, "replicates = 4"), &[]).unwrap();
    assert!(set.is_sweep, "a [sweep] table makes a sweep");
    assert_eq!(seeds_of(&set), [1, 2, 3, 4]);
    assert!(set.points.iter().all(|p| p.point.is_empty()));
    // `--set` reaches the table like any other field.
    let set = load(&scenario(1, ""), &["sweep.replicates=2"]).unwrap();
    assert_eq!(set.seeds, Some(vec![1, 2]));
}

#[test]
fn the_same_seeds_give_the_same_bytes() {
    let set = load(&scenario(3, "replicates = 2"), &[]).unwrap();
    let json = |runs: &[Summary]| {
        let refs: Vec<&Summary> = runs.iter().collect();
        serde_json::to_string(&sweep_report(refs, set.seeds.as_deref())).unwrap()
    };
    let (first, second) = (run(&set), run(&set));
    // The simulator is deterministic (DESIGN: identical seeds give bit-identical results).
    assert_eq!(json(&first), json(&second));
    // `replicates = 2` from seed 3 is `seeds = [3, 4]`.
    let listed = load(&scenario(1, "seeds = [3, 4]"), &[]).unwrap();
    assert_eq!(run(&listed), first);
    // The seeds differ, and so do the runs: the 1 % loss draws from the seed.
    assert_ne!(first[0].flows[0].goodput_bps, first[1].flows[0].goodput_bps);
}

#[test]
fn an_interval_is_the_mean_plus_minus_t_s_over_root_n() {
    // [1, 2, 3, 4, 5]: mean 3, sample variance 10 / 4 = 2.5; t(0.975, 4) = 2.7764 (printed
    // tables, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2), so the half-width is
    // 2.7764 · √2.5 / √5 = 1.9632.
    let s = Stat::of(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    assert_eq!(s.mean, 3.0);
    assert_eq!(s.n, 5);
    assert!((s.std.unwrap() - 2.5f64.sqrt()).abs() < 1e-12);
    let half = 2.776_445 * 2.5f64.sqrt() / 5f64.sqrt();
    assert!((s.ci95_low.unwrap() - (3.0 - half)).abs() < 1e-5, "{s:?}");
    assert!((s.ci95_high.unwrap() - (3.0 + half)).abs() < 1e-5, "{s:?}");
    assert!((s.half_width().unwrap() - 1.963_24).abs() < 1e-5);
    assert!(
        (t_975(4) - 2.776_445).abs() < 1e-6,
        "t(0.975, 4) to 7 digits"
    );
    // One value has no spread, so no interval; none has no statistics at all.
    let one = Stat::of(&[4.0]).unwrap();
    assert_eq!((one.mean, one.n), (4.0, 1));
    assert_eq!((one.std, one.ci95_low, one.ci95_high), (None, None, None));
    assert_eq!(Stat::of(&[]), None);
}

#[test]
fn aggregates_are_the_statistics_of_each_points_runs() {
    let grid = "replicates = 3\n\"links.0.buffer\" = [\"1bdp\", \"2bdp\"]";
    let set = load(&scenario(1, grid), &[]).unwrap();
    let runs = run(&set);
    let refs: Vec<&Summary> = runs.iter().collect();
    let aggregates = aggregate(&refs, 3);
    assert_eq!(aggregates.len(), 2, "one per grid point");
    let second = &aggregates[1];
    assert_eq!(second.runs, [3, 4, 5], "the second point's runs, by index");
    assert_eq!(second.point, runs[3].point);
    // Recomputed here from the runs themselves.
    let goodputs: Vec<f64> = runs[3..].iter().map(|r| r.flows[0].goodput_bps).collect();
    let goodput = second.flows[0].metrics.get("goodput_bps").unwrap();
    assert_eq!(Some(goodput), Stat::of(&goodputs));
    assert_eq!(goodput.n, 3);
    let fills: Vec<f64> = runs[3..]
        .iter()
        .map(|r| r.links[0].mean_queue_fill)
        .collect();
    assert_eq!(
        second.links[0].metrics.get("mean_queue_fill"),
        Stat::of(&fills)
    );
    // One flow has no Jain's index (metrics.rs: fewer than two flows), so neither has its mean.
    assert_eq!(second.jain_index, None);
}

#[test]
fn sweep_json_is_a_list_without_replicates_and_an_object_with_them() {
    // README "Output": the format of a sweep without replicates is unchanged, a list of runs.
    let set = load(
        &scenario(1, "\"links.0.buffer\" = [\"1bdp\", \"2bdp\"]"),
        &[],
    )
    .unwrap();
    assert_eq!(set.seeds, None);
    let runs = run(&set);
    let json = serde_json::to_value(sweep_report(runs.iter().collect(), None)).unwrap();
    assert_eq!(json.as_array().map(Vec::len), Some(2));
    let set = load(&scenario(1, "seeds = [1, 2]"), &[]).unwrap();
    let runs = run(&set);
    let json =
        serde_json::to_value(sweep_report(runs.iter().collect(), set.seeds.as_deref())).unwrap();
    // README "Output": the fields an HTML report reads.
    assert_eq!(json["seeds"], serde_json::json!([1, 2]));
    assert_eq!(json["runs"].as_array().map(Vec::len), Some(2));
    let flow = &json["aggregates"][0]["flows"][0];
    assert_eq!(flow["cc"], "newreno");
    let goodput = &flow["metrics"]["goodput_bps"];
    for key in ["mean", "std", "ci95_low", "ci95_high"] {
        assert!(goodput[key].is_number(), "{key} in {goodput}");
    }
    assert_eq!(goodput["n"], 2);
    assert!(json["aggregates"][0]["links"][0]["metrics"]["utilisation"]["mean"].is_number());
    assert!(json["aggregates"][0]["jain_index"].is_null(), "one flow");
}

/// The error of `text` with `overrides`, which must name `field` and contain `words`.
fn refused(text: &str, overrides: &[&str], field: &str, words: &str) {
    let e = load(text, overrides).expect_err("refused");
    assert_eq!(e.field, field, "{e}");
    assert!(e.message.contains(words), "`{words}` not in: {e}");
}

#[test]
fn bad_seeds_and_replicates_are_refused_with_the_field_named() {
    let both = scenario(1, "seeds = [1, 2]\nreplicates = 2");
    refused(&both, &[], "sweep.replicates", "both given");
    refused(
        &scenario(1, ""),
        &["sweep.seeds=[1]", "sweep.replicates=3"],
        "sweep.replicates",
        "both given",
    );
    for n in ["0", "1001", "\"5\"", "2.5"] {
        let text = scenario(1, &format!("replicates = {n}"));
        refused(
            &text,
            &[],
            "sweep.replicates",
            "a whole number from 1 to 1000",
        );
    }
    refused(
        &scenario(1, "seeds = []"),
        &[],
        "sweep.seeds",
        "a list of 1 to 1000",
    );
    refused(
        &scenario(1, "seeds = 3"),
        &[],
        "sweep.seeds",
        "a list of 1 to 1000",
    );
    refused(
        &scenario(1, "seeds = [1, 2, 1]"),
        &[],
        "sweep.seeds[2]",
        "seed 1 is listed twice",
    );
    refused(
        &scenario(1, "seeds = [-1]"),
        &[],
        "sweep.seeds[0]",
        "from 0 to 9223372036854775807",
    );
    // The last seed of `replicates` must still be a seed.
    let high = scenario(1, "replicates = 2").replacen("seed = 1", "seed = 9223372036854775807", 1);
    refused(
        &high,
        &[],
        "sweep.replicates",
        "at most 9223372036854775807",
    );
    // Outside [sweep] these are no scenario field; the error says where they go.
    let top = format!("replicates = 5\n{}", scenario(1, ""));
    refused(&top, &[], "replicates", "belongs in the [sweep] table");
    refused(
        &scenario(1, ""),
        &["seeds=[1, 2]"],
        "seeds",
        "belongs in the [sweep] table",
    );
    // A seed set twice: by a list of `seed` values, or by --set over `seeds`.
    let twice = scenario(1, "replicates = 2\nseed = [1, 2]");
    refused(&twice, &[], "sweep.\"seed\"", "given by `replicates`");
    refused(
        &scenario(1, "seeds = [1, 2]"),
        &["seed=3"],
        "--set seed",
        "`seeds`",
    );
}

#[test]
fn seeds_count_in_the_sweep_bounds() {
    // README "Limits": at most 10000 runs (grid points x seeds).
    let values: Vec<String> = (1..=101).map(|i| format!("\"{i}pkt\"")).collect();
    let grid = format!(
        "replicates = 100\n\"links.0.buffer\" = [{}]",
        values.join(", ")
    );
    refused(
        &scenario(1, &grid),
        &[],
        "sweep.\"links.0.buffer\"",
        "at most 10000 points",
    );
    let grid = format!(
        "replicates = 99\n\"links.0.buffer\" = [{}]",
        values.join(", ")
    );
    assert_eq!(load(&scenario(1, &grid), &[]).unwrap().points.len(), 9999);
    // And at most 1000000 links and flows over all runs: 1000 seeds of 1002 links and flows.
    let flows = "[[flows]]\ncc = \"cubic\"\npath = [\"bottleneck\"]\nreverse_path = [\"return\"]\n";
    let many = format!(
        "{}{}\n[sweep]\nreplicates = 1000\n",
        scenario(1, "").replace("[sweep]", ""),
        flows.repeat(999)
    );
    refused(
        &many,
        &[],
        "sweep.replicates",
        "points x (links + flows) at most 1000000",
    );
}
