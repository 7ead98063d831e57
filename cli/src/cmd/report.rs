//! `trawl report NAME`: one subcommand per report of the library's list
//! (`trawl_query::registry::reports`), its flags, help and possible values
//! built from the report's options; and the reports that draw figures
//! (flamegraph, timeline, exhaustion, cause, power-samples), declared here.
//! Running a listed report is the same for all: parse, open, answer, print.

use std::path::PathBuf;

use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches, Subcommand};
use trawl_query::report::{shared, Captures, Given, Opt, Report, Selects, Value};

use crate::cmd::{cause::*, exhaustion::*, flamegraph::*, power_samples::*, timeline::*};
use crate::output::{self, Format, OutputOpts};
use crate::session::open_session;

/// A report: one of the library's, with what was given, or a figure.
pub(crate) enum ReportCmd {
    Listed(&'static Report, ArgMatches),
    Figure(Figure),
}

/// The reports that draw (or whose options are the CLI's own). Their
/// place in help among the listed ones (10 per listed report, in the
/// library's order) is their `display_order`.
#[derive(Subcommand)]
pub(crate) enum Figure {
    /// A flame graph (SVG) of the selected samples' stacks; with --diff
    /// BASE, a differential one (red: grew, blue: shrank).
    #[command(display_order = 35)]
    Flamegraph(FlameArgs),
    /// Time ranges where monitoring metrics satisfy a rule (resource
    /// exhaustion), relative to --t0; with --runs, the ranges every run
    /// has (Morita et al., stage A).
    #[command(display_order = 95)]
    Exhaustion(ExhaustionArgs),
    /// What used CPU, memory or I/O inside exhaustion ranges: per range,
    /// process, application function, actual function and application
    /// source line (Morita et al., stage B).
    #[command(display_order = 96)]
    Cause(CauseArgs),
    /// Samples per time window and function (or module, process): the
    /// top N and the rest as [other], with shares; --plot draws them
    /// stacked.
    #[command(display_order = 55)]
    Timeline(TimelineArgs),
    /// Energy-based samples (Ono et al. 2015, §3.5): the samples of several
    /// events merged in time order and cut into runs whose modelled
    /// energy reaches a target P; each run is a power datum, its measured
    /// energy the RAPL counter over it. Mean, spread and share within
    /// ±5 %/±10 % of P for every subset of the events, next to runs of N
    /// consecutive time-based samples.
    #[command(display_order = 175)]
    PowerSamples(PowerSamplesArgs),
}

impl FromArgMatches for ReportCmd {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        if let Some((name, sub)) = m.subcommand() {
            if let Some(r) = trawl_query::registry::report(name) {
                return Ok(ReportCmd::Listed(r, sub.clone()));
            }
        }
        Figure::from_arg_matches(m).map(ReportCmd::Figure)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Subcommand for ReportCmd {
    fn augment_subcommands(cmd: Command) -> Command {
        let mut cmd = Figure::augment_subcommands(cmd);
        for (i, r) in trawl_query::registry::reports().into_iter().enumerate() {
            cmd = cmd.subcommand(command(r).display_order(10 * i));
        }
        cmd
    }

    fn augment_subcommands_for_update(cmd: Command) -> Command {
        Self::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        trawl_query::registry::report(name).is_some() || Figure::has_subcommand(name)
    }
}

/// Help text as clap's derive writes a doc comment: no final period.
fn help(doc: &'static str) -> &'static str {
    doc.strip_suffix('.').unwrap_or(doc)
}

/// The subcommand of report `r`.
fn command(r: &'static Report) -> Command {
    let mut c = Command::new(r.name).about(help(r.about));
    let opts = r.options();
    for o in opts.iter().filter(|o| o.positional) {
        c = c.arg(
            Arg::new(o.name)
                .required(true)
                .value_name(leak(o.name.to_uppercase()))
                .help(help(o.doc)),
        );
    }
    c = match r.captures {
        Captures::Many => c.arg(
            Arg::new("captures")
                .value_name("CAPTURES")
                .num_args(1..)
                .required(true)
                .value_parser(clap::value_parser!(PathBuf))
                .help("Captures (or directories of captures)"),
        ),
        Captures::Sides => c
            .arg(
                Arg::new("base")
                    .required(true)
                    .value_parser(clap::value_parser!(PathBuf))
                    .help("The base capture (or a directory of captures: an archive)"),
            )
            .arg(
                Arg::new("new")
                    .required(true)
                    .value_parser(clap::value_parser!(PathBuf))
                    .help("The new capture (or a directory of captures)"),
            ),
    };
    for o in opts.iter().filter(|o| !o.positional) {
        c = c.arg(flag(o));
    }
    OutputOpts::augment_args(c)
}

/// The flag of option `o`: `--name-with-dashes`, its values checked as
/// the option says.
fn flag(o: &Opt) -> Arg {
    let long = leak(o.name.replace('_', "-"));
    let mut a = Arg::new(o.name).long(long).help(help(o.doc));
    if o.name == shared::LIMIT {
        a = a.short('n');
    }
    if let Some(alias) = o.alias {
        a = a.visible_alias(alias);
    }
    if let Value::Flag = o.value {
        return a.action(ArgAction::SetTrue);
    }
    a = a.action(if o.many {
        ArgAction::Append
    } else {
        ArgAction::Set
    });
    if o.comma {
        a = a.value_delimiter(',');
    }
    if o.required {
        a = a.required(true);
    }
    if let Some(d) = o.default {
        a = a.default_value(d);
    }
    a = match o.value_name {
        Some(v) => a.value_name(v),
        None => a.value_name(leak(o.name.to_uppercase())),
    };
    match o.value {
        Value::Text | Value::Flag => a,
        Value::Int => a.value_parser(checked(|s| s.trim().parse::<i64>().is_ok(), "an integer")),
        Value::Int32 => a.value_parser(checked(
            |s| s.trim().parse::<i32>().is_ok(),
            "a 32-bit integer",
        )),
        Value::Float => a.value_parser(checked(|s| s.trim().parse::<f64>().is_ok(), "a number")),
        Value::Bytes => {
            a.value_parser(|s: &str| trawl_ingest::memlog::parse_size(s).map(|_| s.to_string()))
        }
        Value::Duration => a.value_parser(|s: &str| {
            trawl_query::time::parse_duration_ns(s)
                .map(|_| s.to_string())
                .map_err(|e| e.to_string())
        }),
        Value::Choice(values) => a.value_parser(PossibleValuesParser::new(
            values().into_iter().map(|(name, doc, also)| {
                PossibleValue::new(name)
                    .help(doc)
                    .aliases(also.iter().copied())
            }),
        )),
    }
}

/// A name built once for the command line, which lives as long as the
/// process.
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// A value parser that keeps the text when `ok` accepts it.
fn checked(
    ok: fn(&str) -> bool,
    what: &'static str,
) -> impl Fn(&str) -> Result<String, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        if ok(s) {
            Ok(s.trim().to_string())
        } else {
            Err(format!("{s:?} is not {what}"))
        }
    }
}

/// What the user gave report `r`, by option name.
fn given(r: &Report, m: &ArgMatches) -> Given {
    let paths = |id: &str| -> Vec<PathBuf> {
        m.get_many::<PathBuf>(id)
            .map(|v| v.cloned().collect())
            .unwrap_or_default()
    };
    let captures = match r.captures {
        Captures::Many => paths("captures"),
        Captures::Sides => [paths("base"), paths("new")].concat(),
    };
    let mut g = Given::new(captures);
    for o in r.options() {
        let values = match o.value {
            Value::Flag => match m.get_flag(o.name) {
                true => vec!["true".to_string()],
                false => Vec::new(),
            },
            _ => m
                .get_many::<String>(o.name)
                .map(|v| v.cloned().collect())
                .unwrap_or_default(),
        };
        g.set(o.name, values);
    }
    g
}

/// Runs a report.
pub(crate) async fn report(cmd: ReportCmd) -> Result<()> {
    let (r, m) = match cmd {
        ReportCmd::Listed(r, m) => (r, m),
        ReportCmd::Figure(f) => return figure(f).await,
    };
    let g = given(r, &m);
    let out = OutputOpts::from_arg_matches(&m)?;
    let origin = match (r.takes_t0(), g.text(shared::T0)) {
        (true, Some(t0)) => trawl_query::time::Origin::parse(t0)?,
        _ => trawl_query::time::Origin::default(),
    };
    let s = open_session(&g.captures, &origin).await?;
    let answer = r.answer(&s, &g).await?;
    for line in &answer.log {
        eprintln!("{line}");
    }
    let batches = output::rows_of(answer.df).await?;
    if matches!(out.format, Format::Table) && out.output.is_none() {
        for line in &answer.heading {
            eprintln!("{line}");
        }
        // A directory of captures is read as one: say which.
        let names: Vec<&str> = s.captures().iter().map(|c| c.name.as_str()).collect();
        if names.len() > 1 && r.captures != Captures::Sides {
            let shown = names.iter().take(5).copied().collect::<Vec<_>>().join(", ");
            let more = names.len().saturating_sub(5);
            eprintln!(
                "{} captures together: {shown}{}{}",
                names.len(),
                if more > 0 {
                    format!(", and {more} more")
                } else {
                    String::new()
                },
                if r.selects == Selects::Nothing {
                    ""
                } else {
                    " (--capture NAME for one)"
                }
            );
        }
    }
    if batches.iter().all(|b| b.num_rows() == 0) {
        // Best effort: an explanation that cannot be worked out leaves the
        // (empty) answer as it is.
        for line in r.why_empty(&s, &g).await.unwrap_or_default() {
            eprintln!("{line}");
        }
    }
    output::write(&batches, &out)
}

async fn figure(f: Figure) -> Result<()> {
    match f {
        Figure::Flamegraph(a) => flamegraph(a).await,
        Figure::Exhaustion(a) => exhaustion(a).await,
        Figure::Cause(a) => cause(a).await,
        Figure::Timeline(a) => timeline(a).await,
        Figure::PowerSamples(a) => report_power_samples(a).await,
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::Cli;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// `--cluster` is an option of `trawl` itself, not listed in the help
    /// of commands it does not apply to.
    #[test]
    fn cluster_is_named_in_the_top_help_only() {
        let mut top = Cli::command();
        assert!(top.render_help().to_string().contains("--cluster"));
        for name in ["ingest", "demo", "sql", "report"] {
            // Built, as clap builds it to print help: a global option would
            // be copied into every subcommand then.
            let mut c = Cli::command();
            c.build();
            let sub = c.find_subcommand_mut(name).expect(name);
            let help = sub.render_long_help().to_string();
            assert!(!help.contains("--cluster"), "{name}: {help}");
        }
        let cli = Cli::try_parse_from(["trawl", "--cluster", "df://h:1", "sql", "c", "SELECT 1"])
            .unwrap();
        assert_eq!(cli.cluster.as_deref(), Some("df://h:1"));
        assert!(
            Cli::try_parse_from(["trawl", "ingest", "x", "-o", "y", "--cluster", "df://h:1"])
                .is_err()
        );
    }

    fn given_of(args: &[&str]) -> (&'static str, Given) {
        let cli = Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        match cli.cmd {
            crate::Cmd::Report(ReportCmd::Listed(r, m)) => (r.name, given(r, &m)),
            _ => panic!("{args:?}: not a listed report"),
        }
    }

    #[test]
    fn flags_reach_the_report_by_option_name() {
        let (name, g) = given_of(&[
            "trawl", "report", "latency", "--start", "block:a", "--end", "block:b", "--key", "dev",
            "--key", "sector", "--pid", "7", "--time", "1..2", "-n", "5", "cap",
        ]);
        assert_eq!(name, "latency");
        assert_eq!(g.captures, vec![PathBuf::from("cap")]);
        assert_eq!(g.texts("key"), ["dev", "sector"]);
        assert_eq!(g.text("by"), Some("histogram"), "the default");
        assert_eq!(g.ints("pid").unwrap(), vec![7]);
        let r = trawl_query::time::parse_seconds_range(g.text("time").unwrap()).unwrap();
        assert_eq!(
            (r.from_ns, r.to_ns, r.since_origin),
            (Some(1_000_000_000), Some(2_000_000_000), false)
        );
        assert_eq!(g.limit().unwrap(), Some(5));

        let (_, g) = given_of(&[
            "trawl",
            "report",
            "callers",
            "main",
            "a",
            "b",
            "--no-inline",
        ]);
        assert_eq!(g.text("function"), Some("main"));
        assert_eq!(g.captures.len(), 2);
        assert!(g.flag("no_inline"));

        let (_, g) = given_of(&["trawl", "report", "diff", "old", "new"]);
        assert_eq!(g.captures, vec![PathBuf::from("old"), PathBuf::from("new")]);

        let (_, g) = given_of(&["trawl", "report", "energy", "--by", "package,function", "c"]);
        assert_eq!(g.texts("by"), ["package", "function"]);

        let (_, g) = given_of(&["trawl", "report", "pages", "--page-size", "8k", "c"]);
        assert_eq!(g.bytes("page_size").unwrap(), Some(8192));

        // perf report's habit: --sort dso is --by module.
        let (_, g) = given_of(&["trawl", "report", "hotspots", "--sort", "dso", "c"]);
        assert_eq!(
            g.choice::<trawl_query::stacks::HotspotKey>("by").unwrap(),
            Some(trawl_query::stacks::HotspotKey::Module)
        );
    }

    #[test]
    fn values_are_checked_before_a_report_runs() {
        for bad in [
            &["trawl", "report", "hotspots", "--by", "colour", "c"][..],
            &["trawl", "report", "pages", "--page-size", "4q", "c"],
            &["trawl", "report", "io", "--lead", "soon", "c"],
            &[
                "trawl", "report", "latency", "--start", "a:b", "--end", "a:c", "c",
            ],
            &["trawl", "report", "hotspots"],
            &["trawl", "report", "hotspots", "--pid", "3000000000", "c"],
        ] {
            let e = Cli::try_parse_from(bad)
                .err()
                .unwrap_or_else(|| panic!("{bad:?} parsed"));
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
    }
}
