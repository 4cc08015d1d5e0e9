//! `kbench report` layouts through the real binary: a plan's `[report]`
//! section, the flags that override it, the formats and `-o`.

mod common;

use common::{kbench, plan, stdout};

/// Two command variants whose cost differs by construction (one loop of
/// 20000 vs 200000 shell iterations), swept over two sizes.
const PLAN: &str = r#"
name = "layouts"
samples = 4
warmup = 0

[factors]
work = { apply = "env", var = "WORK", values = ["1", "10"], labels = ["light", "<script>alert(1)</script>"] }

[[bench]]
name = "loop"
shell = "i=0; while [ $i -lt $((20000 * WORK)) ]; do i=$((i+1)); done; : {size}"
sweep = { size = ["2k", "64k"] }
measure = ["real"]

[report]
table = "improvement"
rows = ["size"]
cols = ["work"]
baseline = { work = "light" }
names = { size = "T.S" }
"#;

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = plan(dir.path(), "layouts.toml", PLAN);
    kbench(dir.path())
        .args([
            "run",
            p.to_str().unwrap(),
            "--quiet",
            "--sample-time",
            "0.01",
        ])
        .assert()
        .success();
    (dir, p)
}

#[test]
fn the_plan_layout_the_flags_and_every_format() {
    let (dir, _) = setup();
    let d = dir.path();
    // The plan's layout: improvement of the heavy variant, a row per size.
    let text = stdout(kbench(d).args(["report", "layouts"]));
    assert!(text.contains("% improvement over work=light"), "{text}");
    assert!(text.contains("T.S"), "{text}");
    let pct = |text: &str| -> f64 {
        let row = text
            .lines()
            .find(|l| l.starts_with("64k"))
            .unwrap_or_else(|| panic!("{text}"));
        (row.split_whitespace().nth(1).unwrap())
            .trim_end_matches('*')
            .parse()
            .unwrap()
    };
    // Ten times the work takes far longer: an improvement as the seeds and
    // mmtests print it is positive when better, so this one is large and
    // negative (worse), as the legend says.
    let imp = pct(&text);
    assert!((-2000.0..=-100.0).contains(&imp), "{text}");
    // (The legend wraps at 80 columns.)
    let flat = |t: &str| t.replace("\n  ", " ");
    assert!(
        flat(&text).contains("(baseline - new)/baseline (lower is better: positive = better)"),
        "{text}"
    );
    // `--table change` is new/baseline - 1: the same number, its sign turned.
    let change = stdout(kbench(d).args(["report", "layouts", "--table", "change"]));
    assert!(change.contains("% change over work=light"), "{change}");
    assert!(
        flat(&change).contains("new/baseline - 1 (lower is better: negative = better)"),
        "{change}"
    );
    assert!(
        (pct(&change) + imp).abs() <= 0.01 * imp.abs() + 1.0,
        "{change}"
    );
    for l in text.lines() {
        assert!(l.len() <= 80, "{l}");
    }
    // Markdown escapes the label.
    let md = stdout(kbench(d).args(["report", "layouts", "--format", "markdown"]));
    assert!(md.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{md}");
    assert!(!md.contains("<script>"), "{md}");
    assert!(md.contains("| T.S |"), "{md}");
    // Flags override: a ratio table with the sizes as columns.
    let r = stdout(kbench(d).args([
        "report",
        "layouts",
        "--table",
        "ratio",
        "--cols",
        "size",
        "--baseline",
        "size=2k",
    ]));
    assert!(r.contains("normalised to 2k"), "{r}");
    // CSV: a header and one row per sample, written with -o.
    let out = d.join("s.csv");
    kbench(d)
        .args([
            "report",
            "layouts",
            "--format",
            "csv",
            "-o",
            out.to_str().unwrap(),
        ])
        .assert()
        .success()
        .stdout("");
    let csv = std::fs::read_to_string(&out).unwrap();
    assert!(
        csv.starts_with("run,host,bench,work,env.WORK,size,metric,unit,round,seq,value\n"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 1 + 2 * 2 * 4);
    // JSON: the same model.
    let j = common::json(
        &kbench(d)
            .args(["report", "layouts", "--format", "json"])
            .output()
            .unwrap()
            .stdout,
    );
    // JSON: the cells, and the layout's tables beside them.
    assert_eq!(j["kind"], "report");
    assert_eq!(j["cells"].as_array().unwrap().len(), 4);
    assert_eq!(j["tables"]["layout"], "improvement");
    assert_eq!(
        j["tables"]["tables"][0]["rows"].as_array().unwrap().len(),
        2
    );
}

#[test]
fn a_wrong_dimension_is_one_line_and_exit_2() {
    let (dir, _) = setup();
    for (args, names) in [
        (vec!["--rows", "nope"], "nope"),
        (vec!["--baseline", "nope=1"], "nope"),
        (vec!["--baseline", "work"], "work"),
        // A value no cell has, and a dimension given twice.
        (vec!["--baseline", "work=9999"], "work=9999"),
        (vec!["--baseline", "work=light,work=heavy"], "work"),
        (
            vec!["--table", "improvement", "--baseline", "size=3k"],
            "size=3k",
        ),
    ] {
        let out = kbench(dir.path())
            .args(["report", "layouts"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(names), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn the_compare_summary_fits_80_columns_with_p_for_every_row() {
    let (dir, _) = setup();
    for test in ["student", "welch", "mwu", "bootstrap"] {
        let text = stdout(kbench(dir.path()).args([
            "compare",
            "layouts:size=2k",
            "layouts:size=64k",
            "--test",
            test,
        ]));
        let summary = &text[text.find("summary (").unwrap()..];
        for l in summary.lines() {
            assert!(l.chars().count() <= 80, "{test}: {l}");
        }
        // Rows named by what varies between them (the factor level), what
        // they share (benchmark and metric) heads the label column; no
        // numbered legend. A p-value for every row.
        assert!(
            summary.lines().any(|l| l.starts_with("loop real ")),
            "{summary}"
        );
        assert!(!summary.lines().any(|l| l.starts_with('#')), "{summary}");
        for label in ["work=light ", "work=<script>alert(1)</script> "] {
            let lines: Vec<&str> = summary.lines().filter(|l| l.starts_with(label)).collect();
            assert!(!lines.is_empty(), "{test}: no row {label}: {summary}");
            let p = lines.iter().find_map(|r| {
                let p = r.split_whitespace().rev().nth(1)?;
                p.parse::<f64>().ok().filter(|p| (0.0..=1.0).contains(p))
            });
            assert!(p.is_some(), "{test}: no p for {label}: {summary}");
        }
        assert_eq!(summary.matches("geomean per unit").count(), 1);
    }
}

/// Headless Chromium (Debian's `chromium`, installed by `.ci/run`) renders
/// the HTML report: no console error, no network request, and the chart
/// area of the screenshot is not blank.
#[test]
fn html_renders_in_headless_chromium_without_errors_or_requests() {
    let (dir, _) = setup();
    let d = dir.path();
    let page = d.join("r.html");
    kbench(d)
        .args([
            "report",
            "layouts",
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ])
        .assert()
        .success();
    chromium_renders(&page, "layouts");
}

/// A matrix's charts: one per metric, its axis in the metric's unit
/// (round ticks from 0), the rows named by their factors; a one-row
/// table gets no chart at all.
#[test]
fn matrix_charts_carry_the_unit_and_the_factor_names() {
    let (dir, _) = setup();
    let d = dir.path();
    let page = d.join("m.html");
    kbench(d)
        .args(["report", "layouts", "--table", "matrix", "--format", "html"])
        .arg("-o")
        .arg(&page)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    let title = regex::Regex::new(r#"<h3 class="chart-title">([^<]*)</h3>"#).unwrap();
    let titles: Vec<String> = title
        .captures_iter(&html)
        .map(|c| c[1].to_string())
        .collect();
    assert_eq!(titles.len(), 1, "{html}");
    assert!(titles[0].starts_with("real ["), "{titles:?}");
    // The factors along x, by the names the plan gives them.
    assert!(titles[0].ends_with("by T.S, work"), "{titles:?}");
    assert!(!html.contains("first row"), "{html}");
    // Every tick carries a time unit; the ticks are round and hold 0.
    let y = texts(&html, "ytick");
    assert!(
        y.iter()
            .all(|l| l.ends_with("ms") || l.ends_with(" s") || l.ends_with("µs")),
        "{y:?}"
    );
    assert_round(&y, Some(0.0));
    // Each bar's category names its factors.
    let x = texts(&html, "xtick");
    assert_eq!(x.len(), 4, "{x:?}");
    for l in &x {
        assert!(l.contains("work=") && l.contains("T.S="), "{x:?}");
    }
    chromium_renders(&page, "matrix");
    // One row (one size): the table, no chart.
    let one = stdout(kbench(d).args(["report", "layouts:size=2k", "--format", "html"]));
    assert!(one.contains("<table"), "{one}");
    assert!(!one.contains("<svg"), "{one}");
}

/// Two hosts' runs of one campaign in one store (each run under its own
/// host name, in a UTS namespace): a selector naming one host reports
/// that host's runs and system, whichever host ran last.
#[test]
fn a_selector_naming_one_host_shows_that_hosts_system() {
    let unshare = |host: &str| {
        let mut c = std::process::Command::new("unshare");
        c.args(["--uts", "sh", "-c", "hostname \"$0\" && exec \"$@\"", host]);
        c
    };
    if !unshare("probe")
        .arg("true")
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("skipped: no UTS namespace (run as root with unshare(1))");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = plan(
        d,
        "hosts.toml",
        "name = \"hosts\"\nsamples = 3\nwarmup = 0\n[[bench]]\nname = \"t\"\nshell = \"true\"\nmeasure = [\"real\"]\n",
    );
    for host in ["alpha", "beta"] {
        let out = unshare(host)
            .arg(common::bin())
            .args(["run", "--quiet", "--sample-time", "0.01"])
            .arg(&p)
            .env("KBENCH_DB", common::db(d))
            .env("XDG_CACHE_HOME", d.join("cache"))
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        common::assert_ok(&out);
    }
    for (host, other) in [("alpha", "beta"), ("beta", "alpha")] {
        let sel = format!("hosts:host={host}");
        let text = stdout(kbench(d).args(["report", sel.as_str(), "--table", "matrix"]));
        assert!(
            text.contains(&format!("System configuration ({host})")),
            "{text}"
        );
        assert!(!text.contains(other), "{text}");
        let plain = stdout(kbench(d).args(["report", sel.as_str()]));
        assert!(plain.contains(&format!(" on {host},")), "{plain}");
        assert!(plain.contains("1 run(s)"), "{plain}");
    }
}

/// Two will-it-scale CSVs, one per operating system, imported into one
/// campaign: one chart with a labelled curve per system and mode, an ideal
/// line per mode in the legend, round ticks, in headless Chromium.
#[test]
fn two_systems_scaling_curves_share_one_chart() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let csv = |sys: &str, procs: [u32; 4], threads: [u32; 4]| {
        std::fs::create_dir_all(d.join(sys)).unwrap();
        let mut t = String::from(
            "tasks,processes,processes_idle,threads,threads_idle,linear\n0,0,100,0,100,0\n",
        );
        for (i, n) in [1, 2, 4, 8].iter().enumerate() {
            t.push_str(&format!("{n},{},90.00,{},90.00,0\n", procs[i], threads[i]));
        }
        std::fs::write(d.join(sys).join("brk1.csv"), t).unwrap();
    };
    csv(
        "freebsd",
        [1050000, 1900000, 3100000, 4000000],
        [1000000, 1500000, 1700000, 1600000],
    );
    csv(
        "linux",
        [2510000, 5000000, 9900000, 19500000],
        [2400000, 4600000, 8000000, 12000000],
    );
    kbench(d)
        .current_dir(d)
        .args(["import", "freebsd/brk1.csv", "linux/brk1.csv"])
        .args(["--from", "will-it-scale", "--name", "wis-os"])
        .assert()
        .success();
    // The text table holds both systems, never their average.
    let text = stdout(kbench(d).args(["report", "wis-os", "--table", "scaling"]));
    for want in [
        "freebsd/brk1.csv processes",
        "linux/brk1.csv threads",
        "19.5 Mops/s",
        "1.05 Mops/s",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    assert!(!text.contains("1.78 Mops/s"), "averaged: {text}");
    assert!(text.contains("unknown (imported)"), "{text}");
    // Labelled imports (into a store of their own: the same file is
    // imported once per store) are named by their labels, not their files.
    let lab = d.join("lab");
    std::fs::create_dir(&lab).unwrap();
    for sys in ["freebsd", "linux"] {
        kbench(&lab)
            .current_dir(d)
            .args([
                "import",
                &format!("{sys}/brk1.csv"),
                "--from",
                "will-it-scale",
            ])
            .args(["--name", "wis-labelled", "--label", &format!("os={sys}")])
            .assert()
            .success();
    }
    let labelled = stdout(kbench(&lab).args(["report", "wis-labelled", "--table", "scaling"]));
    for want in ["freebsd processes", "linux threads", "19.5 Mops/s"] {
        assert!(labelled.contains(want), "{want}: {labelled}");
    }
    assert!(!labelled.contains("brk1.csv"), "{labelled}");
    assert!(!text.contains("agree in every"), "{text}");
    // Pooled on request: one curve per mode.
    let pooled = stdout(kbench(d).args(["report", "wis-os", "--table", "scaling", "--pool"]));
    assert!(pooled.contains("1.78 Mops/s"), "{pooled}");
    // Split by run on request: the same two curves, named by run.
    let by_run =
        stdout(kbench(d).args(["report", "wis-os", "--groups", "run", "--table", "ratio"]));
    assert!(!by_run.contains("1.78"), "{by_run}");
    // Both at once contradict each other: bad input, exit 2.
    kbench(d)
        .args(["report", "wis-os", "--groups", "run", "--pool"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--pool merges the runs"));
    for log_y in [false, true] {
        let page = d.join(format!("wis-{log_y}.html"));
        let mut c = kbench(d);
        c.args([
            "report", "wis-os", "--table", "scaling", "--format", "html", "-o",
        ])
        .arg(&page);
        if log_y {
            c.arg("--log-y");
        }
        c.assert().success();
        let html = std::fs::read_to_string(&page).unwrap();
        assert_eq!(html.matches("class=\"curve\"").count(), 4, "{html}");
        assert_eq!(html.matches("class=\"ideal\"").count(), 2, "{html}");
        let legend = texts(&html, "legend");
        assert_eq!(
            legend,
            [
                "freebsd/brk1.csv processes",
                "freebsd/brk1.csv threads",
                "linux/brk1.csv processes",
                "linux/brk1.csv threads",
                "ideal (processes)",
                "ideal (threads)"
            ]
        );
        assert_eq!(texts(&html, "xtick"), ["1", "2", "4", "8"]);
        let y = texts(&html, "ytick");
        assert_round(&y, (!log_y).then_some(0.0));
        chromium_renders(&page, &format!("scaling-log-y-{log_y}"));
    }
}

/// The text of every `<text class="CLASS">` of a page, in order.
fn texts(html: &str, class: &str) -> Vec<String> {
    let re = regex::Regex::new(&format!(r#"<text class="{class}"[^>]*>([^<]*)</text>"#)).unwrap();
    re.captures_iter(html).map(|c| c[1].to_string()).collect()
}

/// Every label a round number: linear ticks one round step apart (1, 2
/// or 5 times a power of ten), log ticks 1, 2 or 5 times one; the
/// reference value among them.
fn assert_round(labels: &[String], reference: Option<f64>) {
    assert!(labels.len() >= 2, "{labels:?}");
    let nums: Vec<f64> = labels
        .iter()
        .map(|l| {
            let n = l.split(' ').next().unwrap().trim_end_matches('%');
            n.parse()
                .unwrap_or_else(|_| panic!("tick {l:?} is no number"))
        })
        .collect();
    let nice = |x: f64| {
        let m = x / 10f64.powf(x.log10().floor());
        [1.0, 2.0, 5.0, 10.0].iter().any(|k| (m - k).abs() < 1e-6)
    };
    let steps: Vec<f64> = nums.windows(2).map(|w| w[1] - w[0]).collect();
    if steps.iter().all(|s| (s - steps[0]).abs() < 1e-9) {
        assert!(nice(steps[0]), "step {}: {labels:?}", steps[0]);
    } else {
        assert!(nums.iter().all(|v| nice(*v)), "{labels:?}");
    }
    if let Some(r) = reference {
        assert!(nums.contains(&r), "no tick at {r}: {labels:?}");
    }
}

/// Headless Chromium renders `page`: no console error, no network
/// request, the chart area of the screenshot not blank. The screenshot is
/// kept (its path printed) for a reader to look at.
fn chromium_renders(page: &std::path::Path, name: &str) {
    let Some(chromium) = ["chromium", "chromium-browser"].into_iter().find(|c| {
        std::process::Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        eprintln!("skipped: no chromium (apt-get install chromium)");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    let profile = tempfile::tempdir().unwrap();
    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.png"));
    let netlog = d.join("net.json");
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1000,700",
            // Chromium's own services (update checks, accounts) try to
            // reach Google even so: no name resolves, nothing leaves.
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    common::assert_ok(&out);
    println!("screenshot: {}", shot.display());
    let err = String::from_utf8_lossy(&out.stderr);
    // Page console messages are logged as `CONSOLE(line)`.
    assert!(!err.contains("CONSOLE"), "{err}");
    assert!(!err.contains("Refused to"), "{err}");
    // Every URL in the net log is the page itself or one of Chromium's own
    // background services (google.com hosts): the page fetched nothing.
    let net = std::fs::read_to_string(&netlog).unwrap();
    let url = regex::Regex::new(r#"(?:https?|wss?|ftp)://([A-Za-z0-9.-]+)"#).unwrap();
    for m in url.captures_iter(&net) {
        let host = &m[1];
        assert!(
            host.ends_with("google.com")
                || host.ends_with("googleapis.com")
                || host == "www.w3.org",
            "a request the page made: {}",
            &m[0]
        );
    }
    assert!(
        net.contains(&format!("file://{}", page.display())),
        "the page was loaded"
    );
    // Decode the screenshot: the chart (below the title, legend) has
    // coloured marks, not only white and grey.
    let decoder = png::Decoder::new(std::fs::File::open(&shot).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let ch = info.color_type.samples();
    let coloured = buf[..info.buffer_size()]
        .chunks(ch)
        .filter(|p| {
            let (r, g, b) = (p[0] as i32, p[1] as i32, p[2] as i32);
            (r - g).abs() > 40 || (g - b).abs() > 40 || (r - b).abs() > 40
        })
        .count();
    assert!(
        coloured > 2000,
        "chart area looks blank: {coloured} coloured pixels"
    );
}

/// hyperfine's own export, imported, reported and compared.
#[test]
fn a_hyperfine_export_imports_and_compares() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(h) = hyperfine_export(d, &["true", "sleep 0.01"]) else {
        return;
    };
    kbench(d)
        .args(["import", h.to_str().unwrap(), "--from", "hyperfine"])
        .assert()
        .success();
    let text = stdout(kbench(d).args(["report", "1", "--table", "ratio", "--cols", "command"]));
    assert!(text.contains("imported from hyperfine"), "{text}");
    let c = stdout(kbench(d).args([
        "compare",
        "1:command=true",
        "1:command=sleep 0.01",
        "--test",
        "student",
    ]));
    let row = c
        .lines()
        .find(|l| l.starts_with("hyperfine time") && l.contains("10+10"))
        .unwrap_or_else(|| panic!("{c}"));
    // sleep 0.01 takes at least 10 ms; `true` well under.
    assert!(row.contains("ms"), "{row}");
    // A malformed file: one line naming it, exit 2, nothing stored.
    let bad = d.join("bad.json");
    std::fs::write(&bad, "{\"results\": [\n{\"command\": 1}]}").unwrap();
    let out = kbench(d)
        .args(["import", bad.to_str().unwrap(), "--from", "hyperfine"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.json:2:"), "{err}");
    let runs = stdout(kbench(d).args(["runs"]));
    assert_eq!(runs.lines().count(), 2, "{runs}");
}

/// hyperfine's export of a command and kbench's run of the same command
/// line pair in `kbench compare`: one row, both sides' samples.
#[test]
fn a_hyperfine_import_pairs_with_kbench_running_the_same_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(h) = hyperfine_export(d, &["sleep 0.01"]) else {
        return;
    };
    kbench(d)
        .args(["import", h.to_str().unwrap(), "--from", "hyperfine"])
        .assert()
        .success();
    kbench(d)
        .args(["run", "sleep 0.01", "--samples", "10", "--quiet"])
        .assert()
        .success();
    let c = stdout(kbench(d).args(["compare", "1", "2", "--test", "student"]));
    assert!(!c.contains("partner"), "{c}");
    // One ministat block of both tools' ten times, one summary row.
    assert!(c.contains("sleep 0.01 real (s, lower is better)"), "{c}");
    for side in ["x  10 ", "+  10 "] {
        assert!(c.lines().any(|l| l.starts_with(side)), "{side}: {c}");
    }
    let rows: Vec<&str> = c
        .lines()
        .filter(|l| l.starts_with("sleep 0.01 real ") && !l.contains("lower is better"))
        .collect();
    assert_eq!(rows.len(), 1, "{c}");
    // Both sides sleep 10 ms: times in ms on the row.
    assert!(rows[0].contains("ms"), "{}", rows[0]);
}

/// `hyperfine -N --runs 10` of `commands`, exported as JSON into `d`;
/// `None` (the test skipped) without hyperfine.
fn hyperfine_export(d: &std::path::Path, commands: &[&str]) -> Option<std::path::PathBuf> {
    if std::process::Command::new("hyperfine")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no hyperfine (apt-get install hyperfine)");
        return None;
    }
    let h = d.join("h.json");
    let ok = std::process::Command::new("hyperfine")
        .args(["-N", "--runs", "10", "--style", "none", "--export-json"])
        .arg(&h)
        .args(commands)
        .output()
        .unwrap();
    common::assert_ok(&ok);
    Some(h)
}

/// `run --profile` of a program whose variant b spends more time in one
/// function: `explain --format html` draws the differential flame graph
/// (the function red, its values on hover), rendered in Chromium fetching
/// nothing; `report --format html` embeds each cell's flame graph.
#[test]
fn profile_flame_graphs_render_in_chromium() {
    let _t = kbench::test_support::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = d.join("prog.c");
    std::fs::write(&src, include_str!("../scripts/explain/prog.c")).unwrap();
    let bin = d.join("prog");
    let st = std::process::Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    let p = common::plan(
        d,
        "fl.toml",
        &format!(
            "name = \"fl\"\nsamples = 4\nwarmup = 0\n[factors]\n\
             variant = {{ apply = \"env\", var = \"VARIANT\", values = [\"a\", \"b\"] }}\n\
             [[bench]]\nname = \"prog\"\ncommand = [\"{}\"]\n",
            bin.display()
        ),
    );
    common::assert_ok(
        &kbench(d)
            .args(["run", p.to_str().unwrap(), "--profile", "-q"])
            .output()
            .unwrap(),
    );
    let html = stdout(kbench(d).args([
        "explain",
        "fl:variant=a",
        "fl:variant=b",
        "--format",
        "html",
    ]));
    assert!(html.contains("<svg class=\"flame\""), "{html}");
    assert!(html.contains("<title>named_hotspot\n"), "{html}");
    assert!(!html.contains("<script"));
    let page = d.join("explain.html");
    std::fs::write(&page, &html).unwrap();
    chromium_renders(&page, "explain-flame");

    // The report embeds one flame graph per profiled cell, below its
    // tables (its rendering is the same SVG as above).
    let rep = stdout(kbench(d).args(["report", "fl", "--format", "html"]));
    assert_eq!(rep.matches("<svg class=\"flame\"").count(), 2, "{rep}");
    assert!(!rep.contains("<script"));
}

/// Issue 44.1: the default counters filled the layout tables (seed 000's
/// matrix gained 7 columns, pipe-patches 14 counter tables) and changed
/// the Holm family of the `*` marks. A plan measured once with the default
/// counters and once with `--counters none`: the improvement and matrix
/// layouts print the same tables and the same family either way, and the
/// counters only with `--all-metrics`.
#[test]
fn layout_tables_show_counters_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = |name: &str| {
        format!(
            "name = \"{name}\"\nsamples = 3\nwarmup = 0\nsample_time = 0.01\n\
             [factors]\nmode = {{ apply = \"shell\", values = [\"a\", \"b\"], setup = \"true\", teardown = \"true\" }}\n\
             [[bench]]\nuse = \"getppid\"\n[[bench]]\nuse = \"getpid\"\n\
             [report]\ntable = \"improvement\"\ncols = [\"mode\"]\nbaseline = {{ mode = \"a\" }}\n"
        )
    };
    for (name, counters) in [("ctr", "default"), ("bare", "none")] {
        let p = plan(d, &format!("{name}.toml"), &text(name));
        kbench(d)
            .args([
                "run",
                p.to_str().unwrap(),
                "--quiet",
                "--counters",
                counters,
            ])
            .assert()
            .success();
    }
    let family = |t: &str| -> Option<String> {
        t.split("Holm-adjusted over ")
            .nth(1)
            .map(|r| r.split_whitespace().next().unwrap_or("").to_string())
    };
    let counter = |t: &str| t.contains("task-clock") || t.contains("context-switches");
    for table in ["improvement", "matrix"] {
        let with = stdout(kbench(d).args(["report", "ctr", "--table", table]));
        let without = stdout(kbench(d).args(["report", "bare", "--table", table]));
        assert!(!counter(&with), "{table}: counters shown unasked:\n{with}");
        assert_eq!(
            family(&with),
            family(&without),
            "{table}:\n{with}\n{without}"
        );
        assert_eq!(
            with.lines().count(),
            without.lines().count(),
            "{table}:\n{with}\n{without}"
        );
        let all = stdout(kbench(d).args(["report", "ctr", "--table", table, "--all-metrics"]));
        assert!(counter(&all), "{table} --all-metrics:\n{all}");
    }
}

/// Issue 43.1: the answer got lost on the way out: `--export-markdown` and
/// the HTML report had no verdict. A two-command run's verdict sentence,
/// as the JSON states it, is in the Markdown and HTML exports and in the
/// text of a layout, word for word.
#[test]
fn the_verdict_sentence_is_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (md, html, js) = (d.join("r.md"), d.join("r.html"), d.join("r.json"));
    kbench(d)
        .args(["run", "sleep 0.01", "sleep 0.02", "--samples", "5", "-q"])
        .arg("--export-markdown")
        .arg(&md)
        .arg("--export-json")
        .arg(&js)
        .assert()
        .success();
    let v = common::json(&std::fs::read(&js).unwrap());
    let sentence = v["summary"]["verdicts"][0]["sentence"]
        .as_str()
        .unwrap_or_else(|| panic!("{v:#}"))
        .to_string();
    let md = std::fs::read_to_string(&md).unwrap().replace('\\', "");
    assert!(md.contains(&sentence), "{sentence}\n{md}");
    kbench(d)
        .args(["report", "1", "--format", "html", "-o"])
        .arg(&html)
        .assert()
        .success();
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains(&format!(
            "<p class=\"answer\"><strong>{sentence}</strong></p>"
        )),
        "{sentence}"
    );
    let text = stdout(kbench(d).args(["report", "1", "--table", "matrix"]));
    assert!(
        text.replace("\n  ", " ").contains(&sentence),
        "{sentence}\n{text}"
    );
}
