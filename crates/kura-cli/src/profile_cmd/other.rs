//! `kura profile -- COMMAND` and `kura profile --pid PID`: paper 002's profiler
//! on programs other than kura (`kura::profile::foreign`); this only parses and prints.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kura::profile::events::{Event, Pmu};
use kura::profile::foreign::{self, ForeignProfile, TraceOptions};
use kura::profile::sampling::{default_period, SampleConfig};

use super::ProfileArgs;
use crate::error::{CliError, CliResult};

/// `--group NAME=P1,P2` → (NAME, [P1, P2]).
pub(crate) fn parse_group(text: &str) -> CliResult<(String, Vec<String>)> {
    let (name, patterns) = text.split_once('=').ok_or_else(|| {
        CliError::Usage(format!(
            "--group {text}: expected NAME=PATTERN[,PATTERN...]"
        ))
    })?;
    let patterns: Vec<String> = patterns
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect();
    if name.trim().is_empty() || patterns.is_empty() {
        return Err(CliError::Usage(format!(
            "--group {text}: expected NAME=PATTERN[,PATTERN...]"
        )));
    }
    Ok((name.trim().to_string(), patterns))
}

fn finish(mut profile: ForeignProfile, args: &ProfileArgs) -> CliResult<()> {
    for g in &args.groups {
        let (name, patterns) = parse_group(g)?;
        profile.add_group(&name, &patterns);
    }
    print!("{}", profile.render(args.top));
    if let Some(path) = &args.json {
        profile.save(path)?;
        eprintln!("saved {}", path.display());
    }
    Ok(())
}

/// Options of the query profile that mean nothing for another program.
fn refuse_query_options(args: &ProfileArgs, what: &str) -> CliResult<()> {
    let refused = [
        (args.count, "--count"),
        (args.overhead, "--overhead"),
        (args.diff.is_some(), "--diff"),
        (args.repeat.is_some(), "--repeat"),
        (!args.settings.is_empty(), "--set"),
    ];
    if let Some((_, flag)) = refused.iter().find(|(on, _)| *on) {
        return Err(CliError::Usage(format!(
            "{flag} applies to profiling queries, not {what}"
        )));
    }
    Ok(())
}

/// `kura profile -- COMMAND ARGS...`: the simulated profile of a whole program.
pub(super) fn trace_command(args: &ProfileArgs) -> CliResult<()> {
    refuse_query_options(args, "-- COMMAND")?;
    if args.sample.is_some() || args.period.is_some() {
        return Err(CliError::Usage(
            "-- COMMAND traces the program under Valgrind (simulated caches); to sample a \
             running program use --pid PID with --sample"
                .into(),
        ));
    }
    if args.no_simulate {
        return Err(CliError::Usage(
            "-- COMMAND is the simulated profile; --no-simulate leaves nothing".into(),
        ));
    }
    for g in &args.groups {
        parse_group(g)?;
    }
    let (program, rest) = args.program.split_first().expect("a command was given");
    let scratch = std::env::temp_dir().join(format!("kura-profile-{}", std::process::id()));
    let shown = args
        .program
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    eprintln!(
        "tracing `{shown}` under Valgrind's lackey (it runs 50-200x slower), every process it starts included"
    );
    let opts = TraceOptions {
        valgrind: args.valgrind.clone(),
        program: program.clone(),
        args: rest.to_vec(),
        geometry_root: args.geometry.clone(),
        scratch,
        count_from_start: true,
        run_as: None,
        output: None,
    };
    let trace = foreign::start(&opts).and_then(|t| t.finish())?;
    let status = trace.status;
    let header = vec![format!(
        "profile of `{shown}`: {} process{}, {:.1} s under lackey, {} MiB of trace read{}",
        trace.processes.len(),
        if trace.processes.len() == 1 { "" } else { "es" },
        trace.elapsed.as_secs_f64(),
        trace.log_bytes >> 20,
        if status.success() {
            String::new()
        } else {
            format!(" ({status})")
        }
    )];
    finish(ForeignProfile::from_trace(trace, header), args)
}

/// `kura profile --pid PID...`: running processes sampled from outside.
pub(super) fn sample_pids(args: &ProfileArgs) -> CliResult<()> {
    refuse_query_options(args, "--pid")?;
    if args.simulate {
        return Err(CliError::Usage(
            "--simulate needs the program started under Valgrind: use `kura profile -- COMMAND`; \
             a running process can only be sampled"
                .into(),
        ));
    }
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        return Err(CliError::Usage(format!(
            "--seconds {}: must be above 0",
            args.seconds
        )));
    }
    for g in &args.groups {
        parse_group(g)?;
    }
    let pmu = Pmu::this_machine();
    let event = match args.sample.as_deref() {
        None | Some("default") => pmu.default_sample_event(),
        Some(name) => Event::parse(name)?,
    };
    let period = args.period.unwrap_or_else(|| default_period(event));
    let cfg = SampleConfig::new(event, period, &pmu)?;
    let interrupt = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupt.clone();
        // A second handler cannot be set (the shell's): then Ctrl-C ends kura.
        let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    }
    eprintln!(
        "sampling {} with {} for up to {} s (Ctrl-C stops early)",
        args.pids
            .iter()
            .map(|p| format!("pid {p}"))
            .collect::<Vec<_>>()
            .join(", "),
        event.name(),
        args.seconds
    );
    let profile = foreign::pid::sample_processes(
        &args.pids,
        cfg,
        &pmu,
        Duration::from_secs_f64(args.seconds),
        &interrupt,
    )?;
    finish(profile, args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_parse_or_say_what_is_expected() {
        assert_eq!(
            parse_group("locks=LWLock, s_lock").unwrap(),
            (
                "locks".to_string(),
                vec!["LWLock".to_string(), "s_lock".to_string()]
            )
        );
        assert!(parse_group("locks")
            .unwrap_err()
            .to_string()
            .contains("NAME=PATTERN"));
        assert!(parse_group("=x").is_err() && parse_group("a=").is_err());
    }
}
