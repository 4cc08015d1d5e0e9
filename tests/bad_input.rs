//! The bad-input table: every case is one clear line on stderr naming the
//! value, file or line at fault, the right exit code, no panic, and a
//! store left byte for byte as it was.

mod common;

use common::kbench;
use std::path::Path;

/// A store with one finished run, checkpointed, and its bytes.
fn store(dir: &Path) -> Vec<u8> {
    kbench(dir)
        .args([
            "run",
            "getuid",
            "--samples",
            "2",
            "--sample-time",
            "0.005",
            "-q",
        ])
        .assert()
        .success();
    // Opening and closing folds the WAL into the file.
    kbench(dir).arg("runs").assert().success();
    std::fs::read(common::db(dir)).unwrap()
}

struct Case {
    args: &'static [&'static str],
    /// Files written into the test directory first: (name, contents).
    files: &'static [(&'static str, &'static str)],
    code: i32,
    needle: &'static str,
}

const fn case(args: &'static [&'static str], code: i32, needle: &'static str) -> Case {
    Case {
        args,
        files: &[],
        code,
        needle,
    }
}

const fn with(
    files: &'static [(&'static str, &'static str)],
    args: &'static [&'static str],
    needle: &'static str,
) -> Case {
    Case {
        args,
        files,
        code: 2,
        needle,
    }
}

/// Event-stream lines for the ingest cases: a run `u1`, its cell `c0`,
/// samples of it.
macro_rules! begun {
    ($run:literal) => {
        concat!(
            r#"{"event":"run_begun","schema":1,"run":""#,
            $run,
            r#"","campaign":null,"host":"h","started":1.0,"fingerprint":{"hostname":"h"},"config":{"version":2,"plan":"p","samples":2,"sample_time":0.1,"warmup":0,"seed":1,"stop":null,"force":false,"argv":[]},"overhead_ns":0.3,"planned_cells":1,"planned_samples":2}"#,
            "\n"
        )
    };
}
macro_rules! prepared {
    ($run:literal, $cell:literal) => {
        concat!(
            r#"{"event":"cell_prepared","run":""#,
            $run,
            r#"","cell":{"key":""#,
            $cell,
            r#"","bench":"getppid","source":"getppid","kind":"micro","params":{},"factors":{},"label_params":[],"metrics":[{"name":"ns/op","unit":"ns","direction":"lower"}],"readings":{}}}"#,
            "\n"
        )
    };
}
macro_rules! sample {
    ($run:literal, $cell:literal, $round:literal, $v:literal) => {
        concat!(
            r#"{"event":"sample","run":""#,
            $run,
            r#"","cell":""#,
            $cell,
            r#"","round":"#,
            $round,
            r#","t":2.5,"values":[["ns/op","#,
            $v,
            "]]}\n"
        )
    };
}

const CASES: &[Case] = &[
    // --- the command line ----------------------------------------------------
    case(&["bogus"], 2, "unrecognized subcommand 'bogus'"),
    case(&["runs", "--bogus"], 2, "unexpected argument '--bogus'"),
    case(&["compare", "1"], 2, "2 values required"),
    case(
        &["run", "--samples", "0", "getuid"],
        2,
        "invalid value '0' for '--samples <N>': 0 is not in 1..=4294967295",
    ),
    case(
        &["run", "--samples", "-1", "getuid"],
        2,
        "invalid value '-1' for '--samples <N>'",
    ),
    case(
        &["run", "--sample-time", "0", "getuid"],
        2,
        "--sample-time 0: must be in (0, 3600]",
    ),
    case(
        &["run", "--sample-time", "-1", "getuid"],
        2,
        "--sample-time -1: must be in",
    ),
    case(
        &["run", "--sample-time", "nan", "getuid"],
        2,
        "--sample-time NaN: must be in",
    ),
    case(&["run", "--precision", "abc", "getuid"], 2, "--precision"),
    case(
        &["run", "--max-samples", "5", "getuid"],
        2,
        "go with --precision or --until-verdict",
    ),
    case(
        &["run", "--until-verdict", "getuid"],
        2,
        "compares two variants; this run has 1 cells",
    ),
    case(
        &["run", "--precision", "1%", "--max-samples", "1", "getuid"],
        2,
        "--max-samples 1: need at least 2",
    ),
    case(
        &["run", "--precision", "1%", "--max-time", "0", "getuid"],
        2,
        "--max-time 0: must be positive",
    ),
    case(
        &["run", "getuid", "--json", "--events", "jsonl"],
        2,
        "choose one",
    ),
    case(
        &["run", "getuid", "--events", "xml"],
        2,
        "invalid value 'xml' for '--events",
    ),
    case(&["run", "nosuch"], 2, "unknown benchmark `nosuch`"),
    case(&["run", "getuid:bogus=1"], 2, "unknown parameter `bogus`"),
    case(&["run", "getuid:cpu"], 2, "expected k=v"),
    case(&["run", "getppid:cpu=99999"], 2, "cpu"),
    case(&["run", "pipe-bw:chunk=0"], 2, "chunk"),
    case(&["run", "getuid", "getuid"], 2, "given twice"),
    case(
        &["run", "a.toml", "b.toml"],
        2,
        "a plan file must be the only argument",
    ),
    case(
        &["run", "missing.toml"],
        2,
        "missing.toml: cannot read a plan",
    ),
    // --- operands of report and compare ----------------------------------------
    case(&["report", "99"], 2, "no run 99 in the store"),
    case(&["report", "campaign:7"], 2, "no campaign 7 in the store"),
    case(&["report", "campaign:x"], 2, "expected campaign:ID"),
    case(&["report", "nosuch"], 2, "no run or campaign `nosuch`"),
    case(
        &["report", "nosuch.toml"],
        2,
        "nosuch.toml: cannot read a plan",
    ),
    case(
        &["report", "1:nosuch=1"],
        2,
        "no factor or parameter `nosuch`",
    ),
    case(
        &["compare", "1", "nosuch"],
        2,
        "no run or campaign `nosuch`",
    ),
    case(
        &["compare", "1:x", "1"],
        2,
        "`1:x`: after `:`, expected k=v, found `x`",
    ),
    case(
        &["compare", "1:a=1,a=2", "1"],
        2,
        "`1:a=1,a=2`: after `:`, `a` is given twice",
    ),
    case(
        &["run", "getppid:cpu=0,cpu=1"],
        2,
        "`getppid:cpu=0,cpu=1`: `cpu` is given twice",
    ),
    case(
        &["run", "--precision", "0%", "getuid"],
        2,
        "percentage `0%` must be more than 0% and less than 100%",
    ),
    case(
        &["compare", "1", "1", "--confidence", "101"],
        2,
        "--confidence 101: must be within 80..99.5",
    ),
    case(
        &["compare", "1", "1", "--confidence", "97"],
        2,
        "ministat's Student's t has 80, 90",
    ),
    case(&["compare", "1", "1", "--margin", "abc"], 2, "--margin"),
    case(
        &["compare", "1", "1", "--test", "foo"],
        2,
        "invalid value 'foo' for '--test",
    ),
    case(
        &["compare", "1", "1", "1", "1", "1", "1", "1", "1"],
        2,
        "at most 7 operands",
    ),
    // --- plan files ---------------------------------------------------------------
    with(&[("p.toml", "samples = 3\n")], &["run", "p.toml"], "p.toml"),
    with(
        &[("p.toml", "name = \"p\"\nsamples = \"many\"\n")],
        &["run", "p.toml"],
        "p.toml:2:11: `samples`",
    ),
    with(
        &[("p.toml", "name = \"p\"\n[[bench]]\nuse = \"nosuch\"\n")],
        &["run", "p.toml"],
        "p.toml:3:7: unknown benchmark `nosuch`",
    ),
    with(
        &[("p.toml", "name = \"p\"\nbogus = 1\n")],
        &["run", "p.toml"],
        "p.toml:2:1",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\n[[bench]]\nuse = \"getuid\"\nparams = { bogus = 1 }\n",
        )],
        &["run", "p.toml"],
        "bogus",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\n[factors]\nx = { apply = \"nope\", values = [1] }\n[[bench]]\nuse = \"getuid\"\n",
        )],
        &["run", "p.toml"],
        "p.toml:3",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\n[factors]\nx = { apply = \"param\", values = [] }\n[[bench]]\nuse = \"getuid\"\n",
        )],
        &["run", "p.toml"],
        "p.toml:3",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\n[[bench]]\nname = \"c\"\ncommand = [\"true\", \"{nosuch}\"]\n",
        )],
        &["run", "p.toml"],
        "nosuch",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\n[[bench]]\nname = \"c\"\ncommand = []\n",
        )],
        &["run", "p.toml"],
        "p.toml:4",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\n[[bench]]\nuse = \"getuid\"\n[[bench]]\nuse = \"getuid\"\n",
        )],
        &["run", "p.toml"],
        "p.toml",
    ),
    with(
        &[("p.toml", "not toml at all [")],
        &["run", "p.toml"],
        "p.toml:1",
    ),
    with(
        &[("p.toml", "name = \"p\"\n[[bench]]\nuse = \"getuid\"\n")],
        &["status", "q.toml"],
        "q.toml: cannot read a plan",
    ),
    // --- event streams -------------------------------------------------------------
    case(
        &["ingest", "/nonexistent/e.jsonl"],
        2,
        "/nonexistent/e.jsonl: cannot read",
    ),
    with(
        &[("e.jsonl", "{\"event\":\"sample\"}\n")],
        &["ingest", "e.jsonl"],
        "e.jsonl:1: not a kbench event",
    ),
    with(
        &[("e.jsonl", "\n\nnot json\n")],
        &["ingest", "e.jsonl"],
        "e.jsonl:3: not a kbench event",
    ),
    with(
        &[(
            "e.jsonl",
            "{\"event\":\"run_ended\",\"run\":\"x\",\"ended\":1.0,\"status\":\"done\"}\n",
        )],
        &["ingest", "e.jsonl"],
        "e.jsonl:1: event for run x",
    ),
    with(
        &[(
            "e.jsonl",
            "{\"event\":\"run_ended\",\"run\":\"x\",\"ended\":1.0,\"status\":\"finished\"}\n",
        )],
        &["ingest", "e.jsonl"],
        "e.jsonl:1: not a kbench event",
    ),
    // A stream that means something impossible stores nothing, not even
    // the run and cell that came before the fault.
    with(
        &[(
            "e.jsonl",
            concat!(
                begun!("u1"),
                sample!("u1", "c0", 0, 5.0),
                prepared!("u1", "c0")
            ),
        )],
        &["ingest", "e.jsonl"],
        "e.jsonl:2: event for cell `c0` of run u1, which the stream did not prepare",
    ),
    with(
        &[(
            "e.jsonl",
            concat!(
                begun!("u1"),
                prepared!("u1", "c0"),
                sample!("u1", "c9", 0, 5.0)
            ),
        )],
        &["ingest", "e.jsonl"],
        "e.jsonl:3: event for cell `c9` of run u1",
    ),
    with(
        &[(
            "e.jsonl",
            concat!(
                begun!("u1"),
                prepared!("u1", "c0"),
                sample!("u2", "c0", 0, 5.0)
            ),
        )],
        &["ingest", "e.jsonl"],
        "e.jsonl:3: event for run u2, which the stream did not begin",
    ),
    with(
        &[(
            "e.jsonl",
            concat!(
                begun!("u1"),
                prepared!("u1", "c0"),
                sample!("u1", "c0", 0, 5.0),
                sample!("u1", "c0", 1, 6.0),
                sample!("u1", "c0", 0, 7.0)
            ),
        )],
        &["ingest", "e.jsonl"],
        "e.jsonl: run u1, cell `c0`: conflicting duplicate: sample of metric `ns/op`, round 0, value 7, but the store holds 5 for it",
    ),
    // --- stores ------------------------------------------------------------------------
    case(&["--db", "", "runs"], 2, "--db \"\": empty"),
    case(
        &["--db", "host=db.lab dbname=k password=SECRET", "runs"],
        2,
        "--db `host=db.lab dbname=k password=***`: a libpq keyword string",
    ),
    case(
        &["--db", "mysql://u@h/k", "runs"],
        2,
        "--db `mysql:...`: not a store kbench knows",
    ),
    case(
        &["--db", "/dev/null", "runs"],
        2,
        "/dev/null: not a regular file",
    ),
    case(&["--db", "/", "runs"], 2, "/: is a directory, not a store"),
    case(
        &["--db", "/nonexistent/dir/k.db", "runs"],
        2,
        "no such store",
    ),
    case(
        &["--db", "/nonexistent/dir/k.db", "report"],
        2,
        "no such store",
    ),
    with(
        &[(
            "junk.db",
            "junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk junk\n",
        )],
        &["--db", "junk.db", "runs"],
        "junk.db: not an SQLite database",
    ),
    case(&["status", "--json"], 2, "required"),
    // clap's list of what is missing used to be left out of the line.
    case(
        &["import", "--from", "ministat"],
        2,
        "the following required arguments were not provided: <FILES>...",
    ),
    case(
        &["compare"],
        2,
        "not provided: <OPERANDS> <OPERANDS>... (see `kbench compare --help`)",
    ),
    case(
        &["bisect", "--good", "a", "--bad", "b"],
        2,
        "not provided: --bench <SPEC>",
    ),
    case(
        &["fleet", "status"],
        2,
        "not provided: --hosts <HOSTS.toml>, <PLAN> (see `kbench fleet status --help`)",
    ),
    case(&["report", "--format", "xml"], 2, "--format"),
    case(&["compare", "1", "1", "--margin", "-5%"], 2, "-5"),
    case(&["run", "--warmup", "-1", "getuid"], 2, "--warmup"),
    case(&["run", "--seed", "x", "getuid"], 2, "--seed"),
    // --- ministat ------------------------------------------------------------------------
    // FreeBSD main's ministat exits 2, Debian's 2015 one 1.
    case(
        &["ministat", "/nonexistent"],
        2,
        "ministat: Cannot open /nonexistent",
    ),
    case(
        &["ministat", "--compat=2015", "/nonexistent"],
        1,
        "ministat: Cannot open /nonexistent",
    ),
    // --- imports: a malformed file stores nothing ---------------------------
    with(
        &[("h.json", "{\"results\": []}")],
        &["import", "--from", "hyperfine", "h.json"],
        "h.json: no results",
    ),
    with(
        &[(
            "h.json",
            "{\"results\": [{\"command\": \"a\", \"times\": [1, \"x\"]}]}",
        )],
        &["import", "--from", "hyperfine", "h.json"],
        "h.json:1:46: not a hyperfine --export-json file: invalid type: string",
    ),
    with(
        &[(
            "h.json",
            "{\"results\": [{\"command\": \"a\", \"mean\": 1}]}",
        )],
        &["import", "--from", "hyperfine", "h.json"],
        "h.json: result 1 (`a`) has no `times`",
    ),
    with(
        &[(
            "h.json",
            "{\"results\": [{\"command\": \"a\", \"times\": [1, 2]}",
        )],
        &["import", "--from", "hyperfine", "h.json"],
        "h.json:1:46: not a hyperfine --export-json file: EOF while parsing",
    ),
    with(
        &[("h.json", "")],
        &["import", "--from", "hyperfine", "h.json"],
        "h.json:1:0: not a hyperfine --export-json file",
    ),
    with(
        &[("h.json", "[1, 2]")],
        &["import", "--from", "hyperfine", "h.json"],
        "h.json:1:2: not a hyperfine --export-json file: invalid type",
    ),
    with(
        &[(
            "h.json",
            "{\"results\": [{\"command\": \"a\", \"times\": []}]}",
        )],
        &["import", "--from", "hyperfine", "h.json"],
        "h.json: result 1 (`a`) has no time",
    ),
    with(
        &[(
            "h.json",
            "{\"results\": [{\"command\": \"a\", \"times\": [1e309]}]}",
        )],
        &["import", "--from", "hyperfine", "h.json"],
        "h.json:1:45: not a hyperfine --export-json file: number out of range",
    ),
    with(
        &[("h.json", "{\"results\": [{\"times\": [1]}]}")],
        &["import", "--from", "hyperfine", "h.json"],
        "missing field `command`",
    ),
    with(
        &[(
            "h.json",
            "{\"results\": [{\"command\": \"a\", \"times\": [0.5, -2]}]}",
        )],
        &["import", "--from", "hyperfine", "h.json"],
        "h.json: result 1 (`a`): time -2",
    ),
    with(
        &[("m.txt", "1\n2\nx\n")],
        &["import", "--from", "ministat", "m.txt"],
        "m.txt:3: no number in column 1",
    ),
    with(
        &[("m.txt", "")],
        &["import", "--from", "ministat", "m.txt"],
        "m.txt: no data points",
    ),
    with(
        &[("m.txt", "# only a comment\n\n")],
        &["import", "--from", "ministat", "m.txt"],
        "m.txt: no data points",
    ),
    with(
        &[("m.txt", "1\nnan\n")],
        &["import", "--from", "ministat", "m.txt"],
        "m.txt:2: NaN, not a number",
    ),
    with(
        &[("m.txt", "1\n1e999\n")],
        &["import", "--from", "ministat", "m.txt"],
        "m.txt:2: inf, not a number",
    ),
    with(
        &[("m.txt", "1 2\n3 y\n")],
        &["import", "--from", "ministat", "-C", "2", "m.txt"],
        "m.txt:2: no number in column 2",
    ),
    with(
        &[("w.csv", "")],
        &["import", "--from", "will-it-scale", "w.csv"],
        "w.csv: empty (want the header",
    ),
    with(
        &[("w.csv", "a,b\n1,2\n")],
        &["import", "--from", "will-it-scale", "w.csv"],
        "w.csv:1: `a,b` is not will-it-scale's header",
    ),
    with(
        &[(
            "w.csv",
            "tasks,processes,processes_idle,threads,threads_idle,linear\n1,x,0,1,0,1\n",
        )],
        &["import", "--from", "will-it-scale", "w.csv"],
        "w.csv:2: processes `x` is not a number",
    ),
    with(
        &[(
            "w.csv",
            "tasks,processes,processes_idle,threads,threads_idle,linear\n1,2,0\n",
        )],
        &["import", "--from", "will-it-scale", "w.csv"],
        "w.csv:2: 3 field(s), want 6",
    ),
    with(
        &[(
            "w.csv",
            "tasks,processes,processes_idle,threads,threads_idle,linear\n1,-5,0,1,0,1\n",
        )],
        &["import", "--from", "will-it-scale", "w.csv"],
        "w.csv:2: negative ops/s -5",
    ),
    with(
        &[(
            "w.csv",
            "tasks,processes,processes_idle,threads,threads_idle,linear\n",
        )],
        &["import", "--from", "will-it-scale", "w.csv"],
        "w.csv: no measured row",
    ),
    with(
        &[(
            "w.csv",
            "tasks,processes,processes_idle,threads,threads_idle,linear\n1,nan,0,1,0,1\n",
        )],
        &["import", "--from", "will-it-scale", "w.csv"],
        "w.csv:2: NaN, not a number",
    ),
    with(
        &[(
            "w.csv",
            "tasks,processes,processes_idle,threads,threads_idle,linear\n1,2,0,1,0,1\n1,3,0,1,0,1\n",
        )],
        &["import", "--from", "will-it-scale", "w.csv"],
        "w.csv:3: a second row for 1 task(s)",
    ),
    with(
        &[
            (
                "good.json",
                "{\"results\": [{\"command\": \"a\", \"times\": [1, 2]}]}",
            ),
            ("h.json", "{\"results\": []}"),
        ],
        &["import", "--from", "hyperfine", "good.json", "h.json"],
        "h.json: no results",
    ),
    case(
        &["import", "--from", "hyperfine", "/nonexistent.json"],
        2,
        "/nonexistent.json: cannot read",
    ),
    with(
        &[("m.txt", "1\n2\n")],
        &["import", "--from", "ministat", "--name", "", "m.txt"],
        "--name: a campaign name must not be empty",
    ),
    with(
        &[("m.txt", "1\n2\n")],
        &["import", "--from", "ministat", "--name", "a:b=c", "m.txt"],
        "--name: campaign name `a:b=c` holds `:` or `=`",
    ),
    with(
        &[("p.toml", "name = \"a:b=c\"\n[[bench]]\nuse = \"getuid\"\n")],
        &["run", "p.toml"],
        "p.toml:1:8: campaign name `a:b=c` holds `:` or `=`",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\nsamples = 4294967296\n[[bench]]\nuse = \"getuid\"\n",
        )],
        &["run", "p.toml"],
        "p.toml:2:11: `samples` must be within 1..=4294967295, found 4294967296",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\nwarmup = 1000000000000\n[[bench]]\nuse = \"getuid\"\n",
        )],
        &["run", "p.toml"],
        "`warmup` must be within 0..=4294967295, found 1000000000000",
    ),
    // The range named is the one accepted (0 was refused while the
    // message offered 0..=4294967295).
    case(
        &["run", "getuid", "--samples", "4294967296"],
        2,
        "4294967296 is not in 1..=4294967295",
    ),
    // A missing `cwd` or probe command is found when the plan is read,
    // not when a cell runs (or by `status` calling the probe `absent`).
    with(
        &[(
            "p.toml",
            "name = \"p\"\n[[bench]]\nname = \"c\"\nshell = \"true\"\ncwd = \"no/such/dir\"\n",
        )],
        &["status", "p.toml"],
        "p.toml:5:7: command `c`: `cwd` `",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\n[[bench]]\nname = \"c\"\nshell = \"true\"\ncwd = \"{plan_dir}/gone\"\n",
        )],
        &["run", "p.toml"],
        "/gone` is not a directory",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\n[factors.m]\napply = \"system\"\nprobe = [\"no-such-probe-prog\"]\nvalues = [\"a\"]\n[[bench]]\nuse = \"getuid\"\n",
        )],
        &["status", "p.toml"],
        "p.toml:4:9: factor `m`: probe command `no-such-probe-prog` is not found on PATH",
    ),
    case(
        &["import", "--from", "ministat", "-C", "0", "m.txt"],
        2,
        "invalid value '0' for '--column <N>'",
    ),
    // --- the lab: PostgreSQL URLs, hosts files ----------------------------
    case(
        &["--db", "postgres://u:hunter2@127.0.0.1:x/db", "runs"],
        2,
        "--db postgres://u:***@127.0.0.1/db: not a PostgreSQL URL (invalid port `x`)",
    ),
    case(
        &["store", "copy", "--from", "nosuch.db", "--to", "x.db"],
        2,
        "nosuch.db: no such store",
    ),
    with(
        &[
            ("p.toml", "name = \"p\"\n[[bench]]\nuse = \"getuid\"\n"),
            (
                "h.toml",
                "[[host]]\nname = \"a\"\nssh = \"a@b\"\nport = \"22\"\n",
            ),
        ],
        &["fleet", "run", "p.toml", "--hosts", "h.toml"],
        "h.toml:4: invalid type",
    ),
    with(
        &[
            ("p.toml", "name = \"p\"\n[[bench]]\nuse = \"getuid\"\n"),
            ("h.toml", "[[host]]\nname = \"a\"\n"),
        ],
        &["fleet", "status", "p.toml", "--hosts", "h.toml"],
        "h.toml: host `a` has no `ssh` destination",
    ),
    case(
        &["fleet", "run", "p.toml", "--hosts", "missing.toml"],
        2,
        "missing.toml: cannot read a hosts file",
    ),
    // --- issue 46: bounds, odd paths, one line naming the remedy -----------
    case(
        &["run", "/dev/zero"],
        2,
        "`/dev/zero`: `/dev/zero` is a device, not a program",
    ),
    case(
        &["status", "/dev/zero"],
        2,
        "/dev/zero: a character device, not a regular file; a plan must be a file",
    ),
    case(
        &["import", "--from", "ministat", "/dev/zero"],
        2,
        "/dev/zero: a character device, not a regular file; an imported file must be a file",
    ),
    case(
        &["--db", ".", "store", "check"],
        2,
        ".: a directory, not a store; name the store's file",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\nsamples = 99999999999999999999\n[[bench]]\nuse = \"getuid\"\n",
        )],
        &["run", "p.toml"],
        "p.toml:2:11: `samples`: integer `99999999999999999999` is too large",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\n[[bench]]\nname = \"c\"\ncommand = [\"\"]\n",
        )],
        &["run", "--dry-run", "p.toml"],
        "p.toml:4:11: `command`: the first argument, the program, is empty",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\n[[bench]]\nname = \"c\"\ncommand = [\"true\"]\nprepare = [\" \", \"x\"]\n",
        )],
        &["run", "--dry-run", "p.toml"],
        "p.toml:5:11: `prepare`: the first argument, the program, is empty",
    ),
    with(
        &[(
            "p.toml",
            "name = \"p\"\nmax_cells = 1\n[factors]\na = { apply = \"cpus\", values = [\"0\", \"0\"], labels = [\"x\", \"y\"] }\n\
             [[bench]]\nuse = \"getuid\"\n",
        )],
        &["run", "--dry-run", "p.toml"],
        "p.toml: the plan expands to 2 cells, over the limit of 1 (raise `max_cells`",
    ),
    with(
        &[
            ("p.toml", "name = \"p\"\n[[bench]]\nuse = \"getuid\"\n"),
            ("h.toml", "[[host]]\nname = \"a\\nb\"\nssh = \"u@h\"\n"),
        ],
        &["fleet", "status", "p.toml", "--hosts", "h.toml"],
        "h.toml: host #1: host name `a\\nb` holds control characters",
    ),
    with(
        &[
            ("p.toml", "name = \"p\"\n[[bench]]\nuse = \"getuid\"\n"),
            (
                "h.toml",
                "[[host]]\nname = \"a\"\nssh = \"ssh://u:hunter2@h\"\n",
            ),
        ],
        &["fleet", "run", "p.toml", "--hosts", "h.toml"],
        "h.toml: host `a`: ssh = `ssh://u:***@h` holds a password",
    ),
    with(
        &[
            ("p.toml", "name = \"p\"\n[[bench]]\nuse = \"getuid\"\n"),
            (
                "h.toml",
                "[[host]]\nname = \"a\"\nssh = \"u@h\"\nport = 99999999999999999999\n",
            ),
        ],
        &["fleet", "status", "p.toml", "--hosts", "h.toml"],
        "h.toml:4: integer `99999999999999999999` is too large",
    ),
];

#[test]
fn every_bad_input_is_one_clear_line_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let before = store(d);
    let mut failures = Vec::new();
    for c in CASES {
        for (name, text) in c.files {
            std::fs::write(d.join(name), text).unwrap();
        }
        let out = kbench(d).current_dir(d).args(c.args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        // Warnings about the machine are not about the input.
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| !l.starts_with("kbench: warning:"))
            .collect();
        let problem = if out.status.code() != Some(c.code) {
            Some(format!("exit {:?}, want {}", out.status.code(), c.code))
        } else if err.contains("panicked") || err.contains("RUST_BACKTRACE") {
            Some("panicked".into())
        } else if lines.len() != 1 {
            Some(format!("{} lines", lines.len()))
        } else if !lines[0].contains(c.needle) {
            Some(format!("missing `{}`", c.needle))
        } else if std::fs::read(common::db(d)).unwrap() != before {
            Some("the store changed".into())
        } else {
            None
        };
        if let Some(p) = problem {
            failures.push(format!("{:?}: {p}\n  stderr: {err}", c.args));
        }
        for (name, _) in c.files {
            let _ = std::fs::remove_file(d.join(name));
        }
    }
    assert!(CASES.len() >= 60, "{} cases", CASES.len());
    eprintln!("{} bad inputs checked", CASES.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// How a test damages a store file: a page (by the object whose root it
/// is) zeroed, overwritten by another object's page, filled with junk, or
/// an object dropped by hand.
enum Damage {
    Zero(&'static str),
    Copy(&'static str, &'static str),
    Junk(&'static str),
    Sql(&'static str),
}

fn damage(db: &Path, how: &Damage) {
    let root = |name: &str| -> u64 {
        let c = rusqlite::Connection::open(db).unwrap();
        c.query_row(
            "SELECT rootpage FROM sqlite_master WHERE name = ?1",
            [name],
            |r| r.get::<_, i64>(0),
        )
        .unwrap() as u64
    };
    let page = |n: u64| (n - 1) * 4096;
    use std::io::{Read, Seek, SeekFrom, Write};
    let write = |at: u64, bytes: &[u8]| {
        let mut f = std::fs::OpenOptions::new().write(true).open(db).unwrap();
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(bytes).unwrap();
    };
    match how {
        Damage::Zero(t) => write(page(root(t)), &[0; 4096]),
        Damage::Junk(t) => {
            let junk: Vec<u8> = (0..4096u32).map(|i| (i * 37 + 11) as u8).collect();
            write(page(root(t)), &junk)
        }
        Damage::Copy(from, to) => {
            let mut b = vec![0; 4096];
            let mut f = std::fs::File::open(db).unwrap();
            f.seek(SeekFrom::Start(page(root(from)))).unwrap();
            f.read_exact(&mut b).unwrap();
            write(page(root(to)), &b);
        }
        Damage::Sql(sql) => {
            let c = rusqlite::Connection::open(db).unwrap();
            c.execute_batch(sql).unwrap();
            c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
        }
    }
}

/// Issue: one overwritten page made `runs` print nothing (exit 0) or
/// `Invalid column type Null at index: 6` (exit 1, no path), and `run`
/// wrote into the store; with a table dropped by hand `run` exited 1 but
/// recorded its run as done. Now every writing command refuses a damaged
/// store in one line naming it (exit 2) and leaves it byte for byte; a
/// reading one never fails without naming it; `store check` lists the
/// problems and exits 2.
#[test]
fn a_damaged_store_is_refused_in_one_line_and_never_written() {
    let variants = [
        Damage::Zero("runs"),
        Damage::Zero("samples"),
        Damage::Junk("samples_identity"),
        Damage::Copy("samples", "runs"),
        Damage::Copy("runs", "cells"),
        Damage::Copy("cells", "samples"),
        Damage::Copy("runs_uuid", "cells_identity"),
        Damage::Copy("samples_identity", "samples_run"),
        Damage::Copy("samples_run", "samples_cell"),
        Damage::Copy("samples_cell", "samples_identity"),
        Damage::Sql("DROP TABLE failures"),
        Damage::Sql("DROP INDEX samples_identity"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    kbench(d)
        .args([
            "run",
            "getuid",
            "getpid",
            "--samples",
            "3",
            "--sample-time",
            "0.002",
            "-q",
        ])
        .assert()
        .success();
    kbench(d).arg("runs").assert().success();
    let good = std::fs::read(common::db(d)).unwrap();
    std::fs::write(d.join("m.txt"), "1\n2\n3\n").unwrap();
    std::fs::write(
        d.join("e.jsonl"),
        concat!(
            begun!("u1"),
            prepared!("u1", "c0"),
            sample!("u1", "c0", 0, 5.0)
        ),
    )
    .unwrap();
    let mut failures = Vec::new();
    for (i, v) in variants.iter().enumerate() {
        let db = d.join(format!("damaged{i}.db"));
        std::fs::write(&db, &good).unwrap();
        damage(&db, v);
        let before = std::fs::read(&db).unwrap();
        let name = db.display().to_string();
        for args in [
            vec![
                "run",
                "getuid",
                "--samples",
                "1",
                "--sample-time",
                "0.002",
                "-q",
            ],
            vec!["import", "--from", "ministat", "m.txt"],
            vec!["ingest", "e.jsonl"],
            vec!["runs"],
            vec!["report", "--json"],
            vec!["store", "check"],
        ] {
            let out = kbench(d)
                .current_dir(d)
                .arg("--db")
                .arg(&db)
                .args(&args)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            let reads = matches!(args[0], "runs" | "report");
            let problem = match out.status.code() {
                Some(0) if reads => None,
                Some(2) if err.lines().count() == 1 && err.contains(&name) => None,
                c => Some(format!("exit {c:?}")),
            };
            let problem = problem.or_else(|| {
                (args[0] == "store" && out.status.code() != Some(2))
                    .then(|| "store check found nothing".to_string())
            });
            let problem = problem.or_else(|| {
                (std::fs::read(&db).unwrap() != before).then(|| "the store changed".to_string())
            });
            if let Some(p) = problem {
                failures.push(format!("variant {i} {args:?}: {p}\n  stderr: {err}"));
            }
        }
    }
    eprintln!("{} damaged stores checked", variants.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
